#!/usr/bin/python3
"""A TLS test API server that behaves like kube-apiserver v1.20 for what
node-agent uses (see /work/shared/notes/kube-api-responses.md): Secrets and
Nodes with resourceVersions from one global counter, GET, LIST, watch
(resourceVersion semantics over a bounded history, synthetic ADDED without an
RV, BOOKMARK events, ERROR 410 "too old resource version" inside a 200 stream,
timeoutSeconds), JSON merge-patch (RFC 7386) with the content type check (415),
PATCH of nodes/<name>/status (status.conditions merged by type for a
strategic merge patch),
401/403/404 Status bodies as recorded, bearer tokens, bootstrap tokens and
client certificates (CN -> user, O -> groups).

Python 3 standard library only (Debian's python3). Two listeners:
  * the API: HTTPS, HTTP/1.1, keep-alive, chunked watches (default 127.0.0.1:6443);
  * the control interface for tests: plain HTTP on loopback (default
    127.0.0.1:6444), JSON in and out; see CONTROL below, and the `ctl`
    subcommand for a client that needs nothing but python3.

Usage:
  kube-apiserver.py serve --pki DIR [--listen ADDR:PORT] [--control ADDR:PORT]
        [--token TOKEN=USER[,GROUP...]] [--bootstrap-token ID.SECRET]
        [--secret-reader SUBJECT] [--node-admin SUBJECT] [--admin SUBJECT]
        [--node NAME] [--secret NS/NAME=OSCFILE] [--machine NAME[=NODE]] [--bookmark-interval SEC]
        [--history N] [--start-rv N] [--tls good|other-ca|wrong-host]
        [--ready-file PATH] [--verbose]
  kube-apiserver.py ctl [--control ADDR:PORT] METHOD PATH [JSON]

A SUBJECT is a user name or "group:NAME". --pki is a directory written by
tests/lib/mkcerts.sh.

Authorization follows the real server with the Node authorizer, RBAC and
NodeRestriction: system:node:<name> identities may get/list/watch all Nodes
and patch only their own (not labels under node-restriction.kubernetes.io/),
and get no Secret at all (403 "no relationship found", also for a missing
one) unless named as a --secret-reader themselves, which stands for a pod on
that node referencing the Secret. --secret-reader subjects may get a named Secret and watch it with
fieldSelector=metadata.name=<name> (RBAC resourceNames), not list them all.
--node-admin subjects may get/list/watch/patch every Node. --admin subjects
(and group system:masters) may do everything. Anonymous requests are
system:anonymous and get 403. Pods: a list of all namespaces with
fieldSelector=spec.nodeName=<node> (a node identity: its own) and DELETE of a
Pod bound to a Node (a node identity: its own) for node identities and
--node-admin subjects (Gardener's node-agent authorizer, authorizePod).

CONTROL (all JSON; times are the server's time.time()):
  GET  /healthz
  POST /secret   {"namespace","name","osc": TEXT | "oscFile": PATH,
                  "checksum": "auto"(default) | "wrong" | "none" | HEX,
                  "labels", "annotations", "data": {key: base64}, "delete": bool}
                 -> {"resourceVersion","t","checksum"}
  GET  /secret?namespace=NS&name=NAME          -> the Secret
  POST /node     {"name", "annotations": {k: v|null}, "labels": {k: v|null}, "status": {...} merged in,
                  "delete": bool}
  GET  /node?name=NAME                         -> the Node
  POST /pod      {"namespace","name","node" (spec.nodeName) | "delete": bool}
  GET  /pods                                   -> {"<ns>/<name>": nodeName} of every Pod
  GET  /annotations?key=KEY                    -> {"values": {node: value or null}} for every Node
  GET  /leases?namespace=NS                    -> {"items": [Leases]}
  GET  /events?namespace=NS                    -> {"items": [Events]} (POSTed by agents)
  POST /lease    {"namespace","name","spec": {...} merged in | "delete": bool}
  GET  /log[?since=T]   -> {"now", "requests": [{"t","end","method","path","status",
                            (method "TLS": a failed handshake; "CLOSED": a
                            connection that ended without a request; "-": blackhole)
                            "user","contentType","watch","fault","error"}]}
                        every request from its start; status and end are null
                        while unknown (in flight; status 0: no answer sent)
  GET  /watches         -> the watches open now
  GET  /annotation-history?node=NAME&key=KEY   -> [{"t","value","rv"}]
  GET  /wait-annotation?node=NAME&key=KEY&value=V&since=T&timeout=S
                        -> {"ok": bool, "t": when it got that value}
                        (absent=1 instead of value: when it was removed)
  POST /fault    {"type": T, "count": N (default 1, -1 = until cleared),
                  "match": substring of "METHOD PATH" (default: every request), ...}
        T = "500" | "429" (+"retryAfter": s) | "reset" (RST before the answer;
            in a watch: half an event, then RST) | "hang" (read the request,
            never answer) | "blackhole" (accept TCP, never even do TLS) |
            "oversize" (+"bytes", default 64 MiB; +"chunked", default true) |
            "badjson" | "410" (410 Expired, as for a too old resourceVersion) |
            "undo" (a PATCH of a Node answers 200 with the Node unchanged,
            like a webhook that sets the fields back) | "blank" (a watch
            answers 200 and then only a blank line every 0.5 s, no event,
            until the client goes, the fault is cleared or the server goes
            down; the log entry gets "end") | "slow" (+"seconds", default
            1: answered as usual that much later)
  POST /clear-faults    drop every scripted fault, release hung connections
  POST /reset-watches   every open watch: half an event, then RST
  POST /expire          forget the watch history and move the RV on: a resume
                        from any RV a client has seen gets ERROR 410
  POST /down            close the listener and every connection
  POST /up              listen again
  POST /restart  {"tls": "good"|"other-ca"|"wrong-host"} down, forget the
                 history (like a real restart: the watch cache restarts), up
  POST /policy   {"allowSecret": SUBJECT} | {"revokeSecret": SUBJECT}
  POST /csr-mode {"mode": M, "lifetime": S, "watch": B, "delay": D} how new
                 CSRs are answered (below); watch false refuses every CSR
                 watch (403); the approver decides D seconds after the create
  GET  /csrs     -> {name: CSR object} every CSR so far

CertificateSigningRequests (certificates.k8s.io/v1, create, get by name and
watch with fieldSelector metadata.name) follow gardener-node-agent's
contract. Who may: bootstrap tokens (system:bootstrappers) and group
gardener.cloud:node-agents create and get CSRs, bootstrap tokens also watch
(system:node-bootstrapper) but node-agent certificates not (403), and nothing
else is open to a bootstrap token (Gardener's node-agent authorizer; give the node-agent identity Secrets and Nodes with
--secret-reader/--node-admin group:gardener.cloud:node-agents). The approver
is Gardener's (gardener-resource-manager csrapprover/reconciler.go): only
CNs "gardener.cloud:node-agent:machine:<m>"; the Machine must exist
(--machine M[=NODE]); a bootstrap requester is denied once NODE exists; a
certificate requester only for its own CN. Approved CSRs are signed at once
with the --pki CA by `openssl ca` (clientAuth; lifetime expirationSeconds,
or the /csr-mode lifetime). Modes for tests: "gardener" (default), "never"
(stays pending), "deny", "fail", "wrong-cn", "wrong-key", "expired",
"other-ca", "future" (issued, but for another CN / another key / already
expired / signed by other-ca / valid only from an hour on: the node's clock
an hour behind the signer's).
  POST /config   {"bookmarkInterval": S}
"""

import argparse
import base64
import collections
import copy
import datetime
import hashlib
import http.client
import http.server
import json
import os
import random
import re
import select
import socket
import socketserver
import ssl
import struct
import sys
import threading
import time
import urllib.parse
import uuid

API_DEFAULT = "127.0.0.1:6443"
CONTROL_DEFAULT = "127.0.0.1:6444"
HANG_MAX = 600.0          # a hung request is released after this at the latest
WATCH_DEFAULT_TIMEOUT = 1800
LOG_MAX = 200000
LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def now_ts():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status(code, reason, message, details=None):
    """A metav1.Status in the exact key order the real server uses."""
    s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
         "message": message, "reason": reason}
    if details is not None:
        s["details"] = details
    s["code"] = code
    return s


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


class Abort(Exception):
    """The connection was reset or dropped on purpose; stop handling it."""


# ---------------------------------------------------------------------------
# object store with resourceVersions and a bounded watch history

def readable(sock, timeout):
    """poll(), not select(): a fleet's descriptors go past FD_SETSIZE (1024),
    where select() fails and a healthy watch looked like a gone client."""
    p = select.poll()
    p.register(sock, select.POLLIN | select.POLLERR | select.POLLHUP)
    return bool(p.poll(timeout * 1000))


class Store:
    def __init__(self, start_rv, history_max):
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)   # the control interface's waiters
        self.rv = start_rv
        self.objects = {}           # (kind, ns, name) -> object
        self.history = collections.deque()   # (rv, type, kind, ns, name, object)
        self.history_max = history_max
        self.floor = start_rv       # every event with rv > floor is in history
        self.ann_history = collections.defaultdict(list)   # (node, key) -> [(t, value, rv)]
        # id -> (matches, Condition on self.lock): each watch is woken only by
        # events it matches, so a fleet's 2,000 watches do not all wake for
        # each write (tests/bench/fleet)
        self.waiters = {}

    def _event(self, typ, kind, ns, name, obj):
        self.history.append((self.rv, typ, kind, ns, name, copy.deepcopy(obj)))
        while len(self.history) > self.history_max:
            ev = self.history.popleft()
            self.floor = ev[0]
        self.cond.notify_all()
        for matches, c in self.waiters.values():
            if matches(kind, ns, name):
                c.notify()

    def wake_all(self):
        """Every waiter (call with the lock held): down, reset, expiry."""
        self.cond.notify_all()
        for _, c in self.waiters.values():
            c.notify()

    def newer(self, pos, matches):
        """The events after pos that match, oldest first: scanned from the
        end, so a fleet's watches cost what is new, not the history's size."""
        evs = []
        for ev in reversed(self.history):
            if ev[0] <= pos:
                break
            if matches(ev[2], ev[3], ev[4]):
                evs.append(ev)
        evs.reverse()
        return evs

    def expire(self):
        with self.cond:
            # as if another resource had been written meanwhile (etcd's
            # revision is global): every RV a client has seen is now too old
            self.rv += 1
            self.history.clear()
            self.floor = self.rv
            self.wake_all()

    def get(self, kind, ns, name):
        with self.cond:
            o = self.objects.get((kind, ns, name))
            return copy.deepcopy(o) if o is not None else None

    def put(self, kind, ns, name, obj):
        """Creates or replaces; returns the stored copy, or the unchanged one
        when nothing but metadata.resourceVersion would change (the real
        server does not write, nor bump the RV, on a no-op update)."""
        with self.cond:
            old = self.objects.get((kind, ns, name))
            if old is not None:
                a = copy.deepcopy(old)
                b = copy.deepcopy(obj)
                a["metadata"].pop("resourceVersion", None)
                b["metadata"].pop("resourceVersion", None)
                if a == b:
                    return copy.deepcopy(old), False
            self.rv += 1
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = str(self.rv)
            if old is None:
                obj["metadata"].setdefault("uid", str(uuid.uuid4()))
                obj["metadata"].setdefault("creationTimestamp", now_ts())
            if kind == "Node":
                t = time.time()
                olda = (old or {}).get("metadata", {}).get("annotations", {}) or {}
                newa = obj["metadata"].get("annotations", {}) or {}
                for k in set(olda) | set(newa):
                    if olda.get(k) != newa.get(k):
                        self.ann_history[(name, k)].append((t, newa.get(k), self.rv))
            self.objects[(kind, ns, name)] = obj
            self._event("MODIFIED" if old is not None else "ADDED", kind, ns, name, obj)
            return copy.deepcopy(obj), True

    def delete(self, kind, ns, name):
        with self.cond:
            old = self.objects.pop((kind, ns, name), None)
            if old is None:
                return None
            self.rv += 1
            old = copy.deepcopy(old)
            old["metadata"]["resourceVersion"] = str(self.rv)
            self._event("DELETED", kind, ns, name, old)
            return old

    def list(self, kind, ns, name):
        with self.cond:
            items = [copy.deepcopy(o) for (k, n, nm), o in sorted(self.objects.items())
                     if k == kind and (ns is None or n == ns) and (name is None or nm == name)]
            return items, self.rv


# ---------------------------------------------------------------------------
# the server state shared by both listeners

class State:
    def __init__(self, args):
        self.args = args
        self.store = Store(args.start_rv, args.history)
        self.lock = threading.Lock()
        self.log = []
        self.faults = []
        self.fault_gen = 0           # bumped by clear-faults: releases hung requests
        self.reset_gen = 0           # bumped by reset-watches
        self.down_gen = 0            # bumped by down/restart: drops every connection
        self.conns = set()
        self.watches = {}
        self.tokens = {}
        for t in args.token:
            tok, _, rest = t.partition("=")
            user, *groups = rest.split(",")
            self.tokens[tok] = (user, [g for g in groups if g])
        self.bootstrap = set(args.bootstrap_token)
        self.secret_readers = set(args.secret_reader)
        self.node_admins = set(args.node_admin)
        self.admins = set(args.admin)
        self.bookmark_interval = args.bookmark_interval
        self.csrs = {}
        self.csr_mode = "gardener"
        self.csr_lifetime = None
        self.csr_watch = True        # /csr-mode "watch": false refuses every CSR watch
        self.csr_delay = 0.0         # /csr-mode "delay": seconds before the approver decides
        self.machines = {}
        for m in args.machine:
            name, _, node = m.partition("=")
            self.machines[name] = node
        self.tls_mode = args.tls
        self.api = None
        self.api_thread = None

    # --- faults
    def take_fault(self, method, path, phase):
        """Returns the first scripted fault matching this request (and uses
        up one count of it), or None. phase "tcp" only matches blackhole."""
        with self.lock:
            for f in self.faults:
                if (f["type"] == "blackhole") != (phase == "tcp"):
                    continue
                m = f.get("match", "")
                if phase != "tcp" and m and m not in "%s %s" % (method, path):
                    continue
                if f["count"] == 0:
                    continue
                if f["count"] > 0:
                    f["count"] -= 1
                return dict(f, gen=self.fault_gen)
            return None

    # --- request log
    def log_request(self, entry):
        with self.lock:
            self.log.append(entry)
            if len(self.log) > LOG_MAX:
                del self.log[:len(self.log) - LOG_MAX]
        if self.args.verbose and entry.get("end") is not None:
            self.print_entry(entry)

    def print_entry(self, entry):
        print("api: %s %s -> %s (%s)" % (entry.get("method"), entry.get("path"),
              entry.get("status"), entry.get("user")), file=sys.stderr, flush=True)

    # --- TLS
    def ssl_context(self):
        pki = self.args.pki
        name = {"good": "server", "other-ca": "server-other-ca",
                "wrong-host": "server-wrong-host"}[self.tls_mode]
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(os.path.join(pki, name + ".crt"), os.path.join(pki, name + ".key"))
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.load_verify_locations(os.path.join(pki, "ca.crt"))
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx

    # --- listener
    def up(self):
        with self.lock:
            if self.api is not None:
                return
            host, port = self.args.listen.rsplit(":", 1)
            srv = ApiServer((host, int(port)), ApiHandler, self, self.ssl_context())
            self.api = srv
            self.api_thread = threading.Thread(target=srv.serve_forever,
                                               kwargs={"poll_interval": 0.05}, daemon=True)
            self.api_thread.start()

    def down(self):
        with self.lock:
            srv, self.api = self.api, None
            self.down_gen += 1
            conns = list(self.conns)
        if srv is not None:
            srv.shutdown()
            srv.server_close()
        for c in conns:
            try:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self.store.cond:
            self.store.wake_all()


class ApiServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024   # a fleet reconnecting at once (tests/bench/fleet); somaxconn caps it

    def __init__(self, addr, handler, state, ctx):
        self.state = state
        self.ctx = ctx
        super().__init__(addr, handler)

    def finish_request(self, request, client_address):
        st = self.state
        with st.lock:
            st.conns.add(request)
            gen = st.down_gen
        try:
            f = st.take_fault("-", "-", "tcp")
            if f is not None:
                st.log_request({"t": time.time(), "end": None, "method": "-", "path": "-",
                                "status": 0, "user": None, "contentType": None,
                                "watch": False, "fault": "blackhole"})
                deadline = time.time() + HANG_MAX
                while time.time() < deadline and st.fault_gen == f["gen"] and st.down_gen == gen:
                    if readable(request, 0.05) and not request.recv(4096):
                        break    # the client gave up
                raise Abort()
            request.settimeout(10)
            try:
                conn = self.ctx.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError) as e:
                st.log_request({"t": time.time(), "end": time.time(), "method": "TLS", "path": "-",
                                "status": 0, "user": None, "contentType": None,
                                "watch": False, "fault": None, "error": str(e)})
                raise Abort()
            with st.lock:
                st.conns.add(conn)
            t_conn = time.time()
            try:
                h = self.RequestHandlerClass(conn, client_address, self)
                if h.n_requests == 0:
                    # The handshake worked but the client hung up without a
                    # request: what a client that checks the host name
                    # after the handshake does with a wrong-host certificate.
                    st.log_request({"t": t_conn, "end": time.time(), "method": "CLOSED", "path": "-",
                                    "status": 0, "user": None, "contentType": None, "watch": False,
                                    "fault": None, "error": "connection closed without a request"})
            finally:
                with st.lock:
                    st.conns.discard(conn)
        except (Abort, OSError, ValueError, ssl.SSLError):
            pass
        finally:
            with st.lock:
                st.conns.discard(request)

    def shutdown_request(self, request):
        try:
            request.close()
        except OSError:
            pass

    def handle_error(self, request, client_address):
        pass


# ---------------------------------------------------------------------------
# the API

RESOURCES = {"secrets": "Secret", "nodes": "Node"}
CSR_RE = re.compile(r"^/apis/certificates\.k8s\.io/v1/certificatesigningrequests(?:/(?P<name>[^/]+))?$")
NA_PREFIX = "gardener.cloud:node-agent:machine:"
NA_GROUP = "gardener.cloud:node-agents"
EVENTS_RE = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/events$")
LEASE_RE = re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/(?P<ns>[^/]+)/leases(?:/(?P<name>[^/]+))?$")
PATH_RE = re.compile(r"^/api/v1/(?:namespaces/(?P<ns>[^/]+)/)?(?P<res>secrets|nodes)(?:/(?P<name>[^/]+))?$")
NODE_STATUS_RE = re.compile(r"^/api/v1/nodes/(?P<name>[^/]+)/status$")
# Pods (agent/podsweep.c): the list of all namespaces, and one Pod.
POD_RE = re.compile(r"^/api/v1/(?:namespaces/(?P<ns>[^/]+)/)?pods(?:/(?P<name>[^/]+))?$")


class ApiHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-apiserver-test/1.20"
    sys_version = ""
    timeout = 120
    n_requests = 0

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.dispatch()

    def do_PATCH(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_DELETE(self):
        self.dispatch()

    # --- helpers
    @property
    def st(self):
        return self.server.state

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > 3 * 1024 * 1024:
            raise Abort()
        return self.rfile.read(n) if n else b""

    def send_json(self, code, obj, extra=None):
        ua = self.headers.get("User-Agent", "")
        if ua.startswith(("curl", "Wget", "Mozilla")):
            body = json.dumps(obj, indent=2).encode() + b"\n"
        else:
            body = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
        self.send_response(code)
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", "application/json")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.entry["status"] = code

    def rst(self, partial=b""):
        """Sends partial bytes (if any), then resets the TCP connection."""
        try:
            if partial:
                self.wfile.write(partial)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass
        self.close_connection = True
        raise Abort()

    def authenticate(self):
        """Returns (user, groups) or None for 401; x509 first, then bearer
        tokens (bootstrap tokens last), else anonymous: like the real union
        authenticator."""
        cert = None
        try:
            cert = self.connection.getpeercert()
        except (ValueError, OSError):
            cert = None
        if cert:
            cn, orgs = None, []
            for rdn in cert.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        cn = v
                    elif k == "organizationName":
                        orgs.append(v)
            if cn:
                return cn, orgs + ["system:authenticated"]
        auth = self.headers.get("Authorization")
        if auth is not None:
            scheme, _, tok = auth.partition(" ")
            tok = tok.strip()
            if scheme.lower() != "bearer" or not tok:
                return None
            if tok in self.st.tokens:
                u, g = self.st.tokens[tok]
                return u, g + ["system:authenticated"]
            if re.match(r"^[a-z0-9]{6}\.[a-z0-9]{16}$", tok) and tok in self.st.bootstrap:
                return ("system:bootstrap:" + tok[:6],
                        ["system:bootstrappers", "system:authenticated"])
            return None
        return "system:anonymous", ["system:unauthenticated"]

    def subject_in(self, user, groups, subjects):
        return user in subjects or any(("group:" + g) in subjects for g in groups)

    def forbidden(self, user, verb, res, ns, name, why=None):
        what = '%s "%s"' % (res, name) if name else res
        scope = 'in the namespace "%s"' % ns if ns else "at the cluster scope"
        msg = '%s is forbidden: User "%s" cannot %s resource "%s" in API group "" %s' % (
            what, user, verb, res, scope)
        if why:
            msg += ": " + why
        details = {"name": name, "kind": res} if name else {"kind": res}
        self.send_json(403, status(403, "Forbidden", msg, details))

    def authorize(self, user, groups, verb, res, ns, name):
        """True when allowed; otherwise answers 403 and returns False."""
        st = self.st
        if self.subject_in(user, groups, st.admins) or "system:masters" in groups:
            return True
        is_node = user.startswith("system:node:") and "system:nodes" in groups
        if res == "nodes":
            if verb in ("get", "list", "watch"):
                if is_node or self.subject_in(user, groups, st.node_admins):
                    return True
            elif verb == "patch":
                if self.subject_in(user, groups, st.node_admins):
                    return True
                if is_node:
                    return True    # NodeRestriction is checked on the patch itself
            self.forbidden(user, verb, res, ns, name)
            return False
        # secrets
        if is_node and user in st.secret_readers and name and verb in ("get", "list", "watch"):
            return True    # as if a pod bound to the node referenced the Secret (record 19)
        if is_node:
            why = ("no relationship found between node '%s' and this object" % user[len("system:node:"):]
                   if name else "No Object name found")
            self.forbidden(user, verb, res, ns, name, why)
            return False
        if name and verb in ("get", "list", "watch") and self.subject_in(user, groups, st.secret_readers):
            return True
        self.forbidden(user, verb, res, ns, name)
        return False

    # --- dispatch
    def dispatch(self):
        st = self.st
        self.n_requests += 1
        self.entry = {"t": time.time(), "end": None, "method": self.command, "path": self.path,
                      "status": None, "user": None,
                      "contentType": self.headers.get("Content-Type"),
                      "watch": False, "fault": None}
        # Logged when it starts, so requests in flight (watches, hung ones)
        # show up; status and end are filled in as they become known.
        st.log_request(self.entry)
        try:
            self.dispatch_inner()
        finally:
            self.entry["end"] = time.time()
            if st.args.verbose:
                st.print_entry(self.entry)

    def dispatch_inner(self):
        st = self.st
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        body = self.read_body() if self.command in ("PATCH", "POST", "PUT") else b""
        is_watch = q.get("watch", "") in ("1", "true", "True")
        self.entry["watch"] = is_watch

        f = st.take_fault(self.command, self.path, "http")
        if f is not None:
            self.entry["fault"] = f["type"]
            if self.apply_fault(f, is_watch):
                return

        who = self.authenticate()
        if who is None:
            self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
            return
        user, groups = who
        self.entry["user"] = user

        if url.path == "/version":
            self.send_json(200, {"major": "1", "minor": "20", "gitVersion": "v1.20.2",
                                 "gitCommit": "faecb196815e248d3ecfb03c680a4507229c2a56",
                                 "gitTreeState": "clean", "buildDate": "2021-01-13T13:20:00Z",
                                 "goVersion": "go1.15.5", "compiler": "gc", "platform": "linux/amd64"})
            return
        if url.path in ("/healthz", "/livez", "/readyz"):
            body = b"ok"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.entry["status"] = 200
            return

        m = CSR_RE.match(url.path)
        if m:
            self.csr(user, groups, m.group("name"), body)
            return
        me = EVENTS_RE.match(url.path)
        if me and self.command == "POST":
            # core/v1 Events (agent/events.c): stored as sent, name generated
            try:
                obj = json.loads(body.decode("utf-8"))
                # as the API server's SimpleNameGenerator: the base cut
                # to 58, then 5 random characters (63 at most)
                name = obj["metadata"]["generateName"][:58] + "".join(
                    random.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
            except (UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
                self.send_json(400, status(400, "BadRequest", "error decoding body: %s" % e))
                return
            obj["metadata"]["name"] = name
            stored, _ = st.store.put("Event", me.group("ns"), name, obj)
            self.send_json(201, stored)
            return
        ml = LEASE_RE.match(url.path)
        if ml:
            self.lease(user, groups, ml.group("ns"), ml.group("name"), body)
            return
        mst = NODE_STATUS_RE.match(url.path)
        if mst:
            self.node_status(user, groups, mst.group("name"), body)
            return
        mp = POD_RE.match(url.path)
        if mp:
            self.pods(user, groups, mp.group("ns"), mp.group("name"), q)
            return
        m = PATH_RE.match(url.path)
        if not m or (m.group("res") == "secrets") != (m.group("ns") is not None):
            self.send_json(404, status(404, "NotFound", "the server could not find the requested resource", {}))
            return
        res, ns, name = m.group("res"), m.group("ns"), m.group("name")
        kind = RESOURCES[res]
        sel_name = None
        fs = q.get("fieldSelector")
        if fs:
            mm = re.match(r"^metadata\.name(?:=|==)([^,]+)$", fs)
            if not mm:
                self.send_json(400, status(400, "BadRequest",
                                           'unable to parse requested field selector "%s"' % fs))
                return
            sel_name = mm.group(1)

        if self.command == "GET" and name:
            if not self.authorize(user, groups, "get", res, ns, name):
                return
            obj = st.store.get(kind, ns, name)
            if obj is None:
                self.send_json(404, status(404, "NotFound", '%s "%s" not found' % (res, name),
                                           {"name": name, "kind": res}))
                return
            self.send_json(200, obj)
            return
        if self.command == "GET":
            verb = "watch" if is_watch else "list"
            if not self.authorize(user, groups, verb, res, ns, sel_name):
                return
            if is_watch:
                self.watch(kind, res, ns, sel_name, q)
                return
            items, rv = st.store.list(kind, ns, sel_name)
            ls = q.get("labelSelector")
            if ls:
                # One equality (key=value or key==value), as
                # gardener-node-agent's list by kubernetes.io/hostname.
                mm = re.match(r"^([A-Za-z0-9./_-]+)==?([A-Za-z0-9._-]*)$", ls)
                if not mm:
                    self.send_json(400, status(400, "BadRequest",
                                               'unable to parse requested label selector "%s"' % ls))
                    return
                items = [o for o in items
                         if (o.get("metadata", {}).get("labels") or {}).get(mm.group(1)) == mm.group(2)]
            self.send_json(200, {"kind": kind + "List", "apiVersion": "v1",
                                 "metadata": {"resourceVersion": str(rv)}, "items": items})
            return
        if self.command == "PATCH" and name:
            if not self.authorize(user, groups, "patch", res, ns, name):
                return
            self.patch(user, groups, kind, res, ns, name, body)
            return
        self.send_json(405, status(405, "MethodNotAllowed",
                                   "the server does not allow this method on the requested resource", {}))

    # --- Pods: list by field selector spec.nodeName, delete (gardener's
    # deleteRemainingPods). Admins may do anything; a node identity or a
    # --node-admin subject may list with spec.nodeName=<a node> (a node
    # identity: its own) and delete a Pod bound to a Node (a node identity:
    # to its own), as Gardener's node-agent authorizer (authorizePod) and
    # the Node authorizer allow. No watch, no get.
    def pods(self, user, groups, ns, name, q):
        st = self.st
        admin = self.subject_in(user, groups, st.admins) or "system:masters" in groups
        is_node = user.startswith("system:node:") and "system:nodes" in groups
        mine = user[len("system:node:"):] if is_node else None
        ok = admin or is_node or self.subject_in(user, groups, st.node_admins)
        if self.command == "GET" and not name:
            fs = q.get("fieldSelector", "")
            mm = re.match(r"^spec\.nodeName(?:=|==)([^,]+)$", fs) if fs else None
            if fs and not mm:
                self.send_json(400, status(400, "BadRequest", 'unable to parse requested field selector "%s"' % fs))
                return
            node = mm.group(1) if mm else None
            if not admin and (not ok or node is None or (mine is not None and node != mine)):
                self.forbidden(user, "list", "pods", ns, None,
                               "can only list/watch pods with spec.nodeName field selector")
                return
            items, rv = st.store.list("Pod", ns, None)
            items = [o for o in items if node is None or (o.get("spec") or {}).get("nodeName") == node]
            self.send_json(200, {"kind": "PodList", "apiVersion": "v1",
                                 "metadata": {"resourceVersion": str(rv)}, "items": items})
            return
        if self.command == "DELETE" and ns and name:
            pod = st.store.get("Pod", ns, name)
            bound = (pod.get("spec") or {}).get("nodeName") if pod else None
            if not admin and (not ok or (pod is not None and (not bound or (mine is not None and bound != mine)))):
                self.forbidden(user, "delete", "pods", ns, name, "pod does not belong to this node")
                return
            gone = st.store.delete("Pod", ns, name)
            if gone is None:
                self.send_json(404, status(404, "NotFound", 'pods "%s" not found' % name,
                                           {"name": name, "kind": "pods"}))
                return
            self.send_json(200, gone)
            return
        self.send_json(405, status(405, "MethodNotAllowed",
                                   "the server does not allow this method on the requested resource", {}))

    # --- CertificateSigningRequests
    def csr(self, user, groups, name, body):
        st = self.st
        q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query, keep_blank_values=True))
        is_watch = q.get("watch", "") in ("1", "true", "True")
        verb = ("watch" if is_watch and not name else "get") if self.command == "GET" else \
            "create" if self.command == "POST" and not name else None
        if verb == "get" and not name:
            verb = None
        if verb is None:
            self.send_json(405, status(405, "MethodNotAllowed",
                                       "the server does not allow this method on the requested resource", {}))
            return
        if not (self.subject_in(user, groups, st.admins) or "system:masters" in groups
                or "system:bootstrappers" in groups or NA_GROUP in groups):
            self.forbidden(user, verb, "certificatesigningrequests", None, name)
            return
        if verb == "watch":
            # Gardener's node-agent authorizer gives a node-agent
            # certificate get/create only (authorizeCertificateSigningRequest);
            # system:node-bootstrapper gives bootstrap tokens watch.
            if not st.csr_watch or (NA_GROUP in groups and "system:bootstrappers" not in groups
                                    and not self.subject_in(user, groups, st.admins)):
                self.forbidden(user, verb, "certificatesigningrequests", None, None)
                return
            sel_name = None
            fs = q.get("fieldSelector")
            if fs:
                mm = re.match(r"^metadata\.name(?:=|==)([^,]+)$", fs)
                if not mm:
                    self.send_json(400, status(400, "BadRequest",
                                               'unable to parse requested field selector "%s"' % fs))
                    return
                sel_name = mm.group(1)
            self.watch("CertificateSigningRequest", "certificatesigningrequests", None, sel_name, q)
            return
        if verb == "get":
            with st.lock:
                o = copy.deepcopy(st.csrs.get(name))
            if o is None:
                self.send_json(404, status(404, "NotFound",
                                           'certificatesigningrequests.certificates.k8s.io "%s" not found' % name,
                                           {"name": name, "group": "certificates.k8s.io",
                                            "kind": "certificatesigningrequests"}))
            else:
                self.send_json(200, o)
            return
        try:
            o = json.loads(body)
            n = o["metadata"]["name"]
            spec = o["spec"]
            pem = base64.b64decode(spec["request"], validate=True)
        except (ValueError, KeyError, TypeError) as e:
            self.send_json(400, status(400, "BadRequest", "invalid CertificateSigningRequest: %s" % e))
            return
        if spec.get("signerName") != "kubernetes.io/kube-apiserver-client" or not spec.get("usages"):
            self.send_json(422, status(422, "Invalid", "spec.signerName/spec.usages invalid"))
            return
        o["metadata"].update({"uid": str(uuid.uuid4()), "creationTimestamp": now_ts(),
                              "resourceVersion": str(st.store.rv)})
        o["spec"]["username"] = user
        o["spec"]["groups"] = groups
        o["status"] = {}
        with st.lock:
            if n in st.csrs:
                exists = True
            else:
                exists = False
                st.csrs[n] = o
        if not exists:
            first = csr_publish(st, n)
        if exists:
            self.send_json(409, status(409, "AlreadyExists",
                                       'certificatesigningrequests.certificates.k8s.io "%s" already exists' % n,
                                       {"name": n, "group": "certificates.k8s.io",
                                        "kind": "certificatesigningrequests"}))
            return
        self.send_json(201, first)

        def decide():
            try:
                decide_csr(st, n, o, pem)
            except Exception as e:  # a test signer problem must show, not hang the client
                set_condition(st, n, "Failed", "SignerError", str(e))
        if st.csr_delay > 0:
            threading.Timer(st.csr_delay, decide).start()
        else:
            decide()

    # --- faults
    def apply_fault(self, f, is_watch):
        """Answers per the fault; returns True when the request is done."""
        st = self.st
        t = f["type"]
        if t == "500":
            self.send_json(500, status(500, "InternalError", "Internal error occurred: scripted test fault",
                                       {"causes": [{"message": "scripted test fault"}]}))
            return True
        if t == "429":
            ra = int(f.get("retryAfter", 1))
            self.send_json(429, status(429, "TooManyRequests", "Too many requests, please try again later.",
                                       {"retryAfterSeconds": ra}), {"Retry-After": str(ra)})
            return True
        if t == "reset":
            if is_watch:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.entry["status"] = 200
                half = b'{"type":"MODIFIED","object":{"kind":"Secret","apiVersion":"v1","metadata":{"name":"x'
                self.rst(b"%x\r\n%s" % (len(half) * 2, half))
            self.entry["status"] = 0
            self.rst()
        if t == "410":
            self.send_json(410, status(410, "Expired", "too old resource version: 1 (2)"))
            return True
        if t == "undo":
            m = re.match(r"/api/v1/nodes/([^/?]+)", self.path)
            node = st.store.get("Node", None, m.group(1)) if m else None
            if node is None:
                self.send_json(404, status(404, "NotFound", "not found"))
            else:
                self.send_json(200, node)
            return True
        if t == "slow":
            # answered as usual, "seconds" later (a loaded server)
            deadline = time.time() + float(f.get("seconds", 1))
            while time.time() < deadline and not self.client_gone():
                time.sleep(0.05)
            return False
        if t == "hang":
            self.entry["status"] = 0
            gen = st.down_gen
            deadline = time.time() + HANG_MAX
            while time.time() < deadline and st.fault_gen == f["gen"] and st.down_gen == gen:
                if self.client_gone():
                    self.entry["error"] = "client gave up"
                    break
                time.sleep(0.05)
            self.rst()
        if t == "badjson":
            body = b'{"kind":"Secret","apiVersion":"v1","metadata":{"name":"osc",,"data":{"osc.yaml":"' + b"\x00\xff}" * 8
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if is_watch:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.entry["status"] = 200
                line = body + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                # keep the stream open (the client must give up on it) until
                # the fault is cleared, the server goes down, or 30 s
                gen = st.down_gen
                deadline = time.time() + 30
                while time.time() < deadline and st.down_gen == gen and st.fault_gen == f["gen"]:
                    time.sleep(0.05)
                self.rst()
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.entry["status"] = 200
            return True
        if t == "blank" and is_watch:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.entry["status"] = 200
            gen = st.down_gen
            deadline = time.time() + HANG_MAX
            try:
                while time.time() < deadline and st.down_gen == gen and st.fault_gen == f["gen"]:
                    self.write_part(b"\n", True)
                    self.wfile.flush()
                    if self.client_gone():
                        break
                    time.sleep(0.5)
            except OSError:
                pass
            finally:
                self.entry["end"] = time.time()
            self.rst()
        if t == "oversize":
            total = int(f.get("bytes", 64 << 20))
            chunked = bool(f.get("chunked", True)) or is_watch
            head = b'{"kind":"Secret","apiVersion":"v1","metadata":{"name":"big"},"data":{"osc.yaml":"'
            tail = b'"}}\n'
            pad = total - len(head) - len(tail)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(total))
            self.end_headers()
            self.entry["status"] = 200
            piece = b"A" * (1 << 20)
            if is_watch:
                head = b'{"type":"MODIFIED","object":' + head
            sent = 0
            try:
                self.write_part(head, chunked)
                while sent < pad:
                    n = min(len(piece), pad - sent)
                    self.write_part(piece[:n], chunked)
                    sent += n
                self.write_part(tail, chunked)
                if chunked:
                    self.wfile.write(b"0\r\n\r\n")
            except OSError:
                self.entry["error"] = "client closed after %d bytes" % (len(head) + sent)
                raise Abort()
            self.entry["bytesSent"] = len(head) + sent + len(tail)
            return True
        return False

    def write_part(self, data, chunked):
        if chunked:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        else:
            self.wfile.write(data)

    # --- nodes/<name>/status (agent/conditions.c)
    def node_status(self, user, groups, name, body):
        """PATCH of a Node's status: strategic merge patch (status.conditions
        merged by "type", as core/v1 NodeStatus's patchMergeKey) or merge
        patch (the list replaced); only status changes. Allowed as for a
        Node PATCH (the Node itself, node admins, admins)."""
        st = self.st
        if self.command == "GET":
            if not self.authorize(user, groups, "get", "nodes", None, name):
                return
            obj = st.store.get("Node", None, name)
            if obj is None:
                self.send_json(404, status(404, "NotFound", 'nodes "%s" not found' % name, {"name": name, "kind": "nodes"}))
            else:
                self.send_json(200, obj)
            return
        if self.command != "PATCH":
            self.send_json(405, status(405, "MethodNotAllowed",
                                       "the server does not allow this method on the requested resource", {}))
            return
        if not self.authorize(user, groups, "patch", "nodes", None, name):
            return
        is_node = user.startswith("system:node:") and "system:nodes" in groups
        privileged = (self.subject_in(user, groups, st.admins) or "system:masters" in groups
                      or self.subject_in(user, groups, st.node_admins))
        if is_node and not privileged and user[len("system:node:"):] != name:
            self.send_json(403, status(403, "Forbidden", 'nodes "%s" is forbidden: node "%s" is not allowed to modify node "%s"'
                                       % (name, user[len("system:node:"):], name), {"name": name, "kind": "nodes"}))
            return
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            self.send_json(415, status(415, "UnsupportedMediaType", "415: Unsupported Media Type", {}))
            return
        try:
            p = json.loads(body.decode("utf-8"))
            ps = p.get("status") or {}
            if not isinstance(ps, dict):
                raise ValueError("status: not an object")
            conds = ps.get("conditions")
            if conds is not None and (not isinstance(conds, list) or
                                      not all(isinstance(c, dict) and isinstance(c.get("type"), str) for c in conds)):
                raise ValueError("status.conditions: not a list of objects with a type")
        except (UnicodeDecodeError, ValueError, AttributeError) as e:
            self.send_json(400, status(400, "BadRequest", "error decoding patch: %s" % e))
            return
        with st.store.cond:
            cur = st.store.get("Node", None, name)
            if cur is None:
                self.send_json(404, status(404, "NotFound", 'nodes "%s" not found' % name, {"name": name, "kind": "nodes"}))
                return
            new = copy.deepcopy(cur)
            rest = {k: v for k, v in ps.items() if k != "conditions"}
            new["status"] = merge_patch(new.get("status") or {}, rest)
            if conds is not None:
                if ctype == "application/strategic-merge-patch+json":
                    have = list((new["status"].get("conditions") or []))
                    for c in conds:
                        i = next((k for k, h in enumerate(have) if h.get("type") == c["type"]), None)
                        if i is None:
                            have.append(c)
                        else:
                            have[i] = merge_patch(have[i], c)
                    new["status"]["conditions"] = have
                else:
                    new["status"]["conditions"] = conds
            stored, _ = st.store.put("Node", None, name, new)
        self.send_json(200, stored)

    # --- patch
    def patch(self, user, groups, kind, res, ns, name, body):
        st = self.st
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            self.send_json(415, status(415, "UnsupportedMediaType", "415: Unsupported Media Type", {}))
            return
        try:
            p = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            self.send_json(400, status(400, "BadRequest", "error decoding patch: %s" % e))
            return
        if not isinstance(p, dict):
            self.send_json(400, status(400, "BadRequest", "error decoding patch: not a JSON object"))
            return
        is_node = user.startswith("system:node:") and "system:nodes" in groups
        privileged = (self.subject_in(user, groups, st.admins) or "system:masters" in groups
                      or self.subject_in(user, groups, st.node_admins))
        if kind == "Node" and is_node and not privileged:
            me = user[len("system:node:"):]
            if me != name:
                self.send_json(403, status(403, "Forbidden", 'nodes "%s" is forbidden: node "%s" is not allowed to modify node "%s"'
                                           % (name, me, name), {"name": name, "kind": res}))
                return
        with st.store.cond:
            cur = st.store.get(kind, ns, name)
            if cur is None:
                self.send_json(404, status(404, "NotFound", '%s "%s" not found' % (res, name),
                                           {"name": name, "kind": res}))
                return
            want_rv = (p.get("metadata") or {}).get("resourceVersion") if isinstance(p.get("metadata"), dict) else None
            if want_rv is not None and want_rv != cur["metadata"]["resourceVersion"]:
                self.send_json(409, status(409, "Conflict",
                                           'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                                           'please apply your changes to the latest version and try again' % (res, name),
                                           {"name": name, "kind": res}))
                return
            new = merge_patch(cur, p)
            md = new.get("metadata")
            if not isinstance(md, dict):
                self.send_json(400, status(400, "BadRequest", "metadata: expected an object"))
                return
            for field in ("labels", "annotations"):
                v = md.get(field)
                if v is None:
                    md.pop(field, None)
                    continue
                if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
                    self.send_json(400, status(400, "BadRequest",
                                               "json: cannot unmarshal into Go struct field ObjectMeta.metadata.%s of type string" % field))
                    return
                if not v:
                    md.pop(field)
            for k, v in (md.get("labels") or {}).items():
                if len(v) > 63 or not LABEL_VALUE_RE.match(v):
                    self.send_json(422, status(422, "Invalid", '%s "%s" is invalid: metadata.labels: Invalid value: "%s": '
                                               "a valid label must be an empty string or consist of alphanumeric characters, "
                                               "'-', '_' or '.', and must start and end with an alphanumeric character"
                                               % (kind, name, v), {"name": name, "kind": res,
                                                                    "causes": [{"reason": "FieldValueInvalid",
                                                                                "message": "Invalid value",
                                                                                "field": "metadata.labels"}]}))
                    return
            for key in ("name", "namespace", "uid", "creationTimestamp"):
                if cur["metadata"].get(key) != md.get(key):
                    self.send_json(422, status(422, "Invalid", "%s \"%s\" is invalid: metadata.%s: field is immutable"
                                               % (kind, name, key), {"name": name, "kind": res}))
                    return
            if kind == "Node" and is_node and not privileged:
                oldl = cur["metadata"].get("labels") or {}
                newl = md.get("labels") or {}
                bad = sorted(k for k in set(oldl) | set(newl)
                             if oldl.get(k) != newl.get(k) and
                             k.split("/")[0].endswith("node-restriction.kubernetes.io"))
                if bad:
                    self.send_json(403, status(403, "Forbidden", 'nodes "%s" is forbidden: is not allowed to modify labels: %s'
                                               % (name, ", ".join(bad)), {"name": name, "kind": res}))
                    return
            stored, _ = st.store.put(kind, ns, name, new)
        self.send_json(200, stored)

    def lease(self, user, groups, ns, name, body):
        """coordination.k8s.io/v1 Leases for agent/lease.c and agent/serial.c: GET, LIST, POST,
        PUT (with the resourceVersion precondition), merge PATCH for admins only; admins, node
        admins, and a Node for gardener-node-agent-<itself> (like GRM's
        node-agent authorizer)."""
        st, cmd = self.st, self.command
        me = user[len("system:node:"):] if user.startswith("system:node:") else None
        # and the serial rollout Lease named like the Secret its Node's label names
        # (pkg/resourcemanager/webhook/nodeagentauthorizer/authorizer.go authorizeLease)
        mine = me and st.store.get("Node", None, me)
        pool = ((mine or {}).get("metadata", {}).get("labels") or {}).get(
            "worker.gardener.cloud/gardener-node-agent-secret-name")
        if not (self.subject_in(user, groups, st.admins) or "system:masters" in groups or
                self.subject_in(user, groups, st.node_admins) or
                (me and (name == "gardener-node-agent-" + me or (pool and name == pool) or
                         (cmd == "POST" and not name)))):
            self.forbidden(user, cmd.lower(), "leases", ns, name)
            return
        if cmd == "GET" and not name:
            items, rv = st.store.list("Lease", ns, None)
            self.send_json(200, {"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1",
                                 "metadata": {"resourceVersion": str(rv)}, "items": items})
        elif cmd == "GET":
            obj = st.store.get("Lease", ns, name)
            if obj is None:
                self.send_json(404, status(404, "NotFound", 'leases.coordination.k8s.io "%s" not found' % name,
                                           {"name": name, "group": "coordination.k8s.io", "kind": "leases"}))
            else:
                self.send_json(200, obj)
        elif cmd == "POST" and not name:
            try:
                obj = json.loads(body.decode("utf-8"))
                name = obj["metadata"]["name"]
            except (UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
                self.send_json(400, status(400, "BadRequest", "error decoding body: %s" % e))
                return
            obj["metadata"]["namespace"] = ns
            with st.store.cond:
                if st.store.get("Lease", ns, name) is not None:
                    self.send_json(409, status(409, "AlreadyExists", 'leases.coordination.k8s.io "%s" already exists'
                                               % name, {"name": name, "kind": "leases"}))
                    return
                stored, _ = st.store.put("Lease", ns, name, obj)
            self.send_json(201, stored)
        elif cmd == "PATCH" and name:
            # Gardener's node-agent authorizer allows get, list, watch,
            # create, update on leases, no patch (authorizeLease).
            if me and not (self.subject_in(user, groups, st.admins) or "system:masters" in groups or
                           self.subject_in(user, groups, st.node_admins)):
                self.forbidden(user, "patch", "leases", ns, name)
                return
            self.patch(user, groups, "Lease", "leases", ns, name, body)
        elif cmd == "PUT" and name:
            try:
                obj = json.loads(body.decode("utf-8"))
                md = obj["metadata"]
                if not isinstance(md, dict) or md.get("name") != name or obj.get("kind", "Lease") != "Lease":
                    raise ValueError("metadata.name or kind")
            except (UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
                self.send_json(400, status(400, "BadRequest", "error decoding body: %s" % e))
                return
            with st.store.cond:
                cur = st.store.get("Lease", ns, name)
                if cur is None:
                    self.send_json(404, status(404, "NotFound", 'leases.coordination.k8s.io "%s" not found' % name,
                                               {"name": name, "group": "coordination.k8s.io", "kind": "leases"}))
                    return
                want_rv = md.get("resourceVersion")
                if want_rv and want_rv != cur["metadata"]["resourceVersion"]:
                    self.send_json(409, status(409, "Conflict",
                                               'Operation cannot be fulfilled on leases.coordination.k8s.io "%s": the '
                                               'object has been modified; please apply your changes to the latest '
                                               'version and try again' % name, {"name": name, "kind": "leases"}))
                    return
                for key in ("namespace", "uid", "creationTimestamp"):
                    if cur["metadata"].get(key) is not None:
                        md[key] = cur["metadata"][key]
                obj.setdefault("apiVersion", "coordination.k8s.io/v1")
                obj["kind"] = "Lease"
                stored, _ = st.store.put("Lease", ns, name, obj)
            self.send_json(200, stored)
        else:
            self.send_json(405, status(405, "MethodNotAllowed",
                                       "the server does not allow this method on the requested resource", {}))

    # --- watch
    def bookmark_object(self, kind, rv):
        if kind == "Node":
            return {"kind": "Node", "apiVersion": "v1",
                    "metadata": {"resourceVersion": str(rv), "creationTimestamp": None},
                    "spec": {},
                    "status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
                               "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                                            "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "",
                                            "kubeProxyVersion": "", "operatingSystem": "", "architecture": ""}}}
        return {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": str(rv), "creationTimestamp": None}}

    def send_event(self, typ, obj):
        line = json.dumps({"type": typ, "object": obj}, separators=(",", ":")).encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))

    def client_gone(self):
        try:
            if not readable(self.connection, 0):
                return False
        except (OSError, ValueError):
            return True
        try:
            self.connection.settimeout(0.01)
            d = self.connection.recv(1)
            return d == b""
        except (ssl.SSLWantReadError, socket.timeout, BlockingIOError):
            return False
        except (OSError, ssl.SSLError):
            return True
        finally:
            try:
                self.connection.settimeout(self.timeout)
            except OSError:
                pass

    def watch(self, kind, res, ns, sel_name, q):
        st = self.st
        store = st.store
        rvp = q.get("resourceVersion", "")
        bookmarks = q.get("allowWatchBookmarks", "") in ("1", "true", "True")
        try:
            timeout = int(q["timeoutSeconds"]) if q.get("timeoutSeconds") else WATCH_DEFAULT_TIMEOUT
        except ValueError:
            self.send_json(400, status(400, "BadRequest", "invalid timeoutSeconds"))
            return
        if rvp not in ("", "0"):
            try:
                rv0 = int(rvp)
            except ValueError:
                self.send_json(400, status(400, "BadRequest", 'invalid resource version: "%s"' % rvp))
                return

        def matches(k, n, nm):
            return k == kind and (ns is None or n == ns) and (sel_name is None or nm == sel_name)

        with store.cond:
            gen_down, gen_reset = st.down_gen, st.reset_gen
            initial = []
            expired = None
            if rvp in ("", "0"):
                for (k, n, nm), o in sorted(store.objects.items(), key=lambda kv: int(kv[1]["metadata"]["resourceVersion"])):
                    if matches(k, n, nm):
                        initial.append(("ADDED", copy.deepcopy(o)))
                pos = store.rv
            elif rv0 < store.floor:
                expired = status(410, "Expired", "too old resource version: %d (%d)" % (rv0, store.floor))
                pos = store.rv
            else:
                pos = rv0

        self.send_response(200)
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.entry["status"] = 200
        wid = id(self)
        with st.lock:
            st.watches[wid] = {"t": self.entry["t"], "path": self.path, "user": self.entry["user"]}
        wcond = threading.Condition(store.lock)
        with store.cond:
            store.waiters[wid] = (matches, wcond)
        try:
            if expired is not None:
                self.send_event("ERROR", expired)
                self.wfile.write(b"0\r\n\r\n")
                return
            for typ, o in initial:
                self.send_event(typ, o)
            start = time.time()
            deadline = start + timeout
            final_bm = deadline - 2 if timeout > 2 else None
            next_bm = start + st.bookmark_interval
            while True:
                with store.cond:
                    evs = []
                    if pos < store.floor:
                        evs = None
                    else:
                        evs = store.newer(pos, matches)
                    cur_rv = store.rv
                    if evs == []:
                        # a fleet (tests/bench/fleet) wakes less often: 2,000 watches x 4/s is the GIL's limit
                        tick = 0.25 if len(st.watches) < 256 else 1.0
                        wait = min(tick, max(0.0, deadline - time.time()))
                        wcond.wait(wait)
                if st.down_gen != gen_down:
                    self.rst()
                if st.reset_gen != gen_reset:
                    half = b'{"type":"MODIFIED","object":{"kind":"%s","apiVersion":"v1","metadata":{"name":"x' % kind.encode()
                    self.rst(b"%x\r\n%s" % (len(half) * 2, half))
                if evs is None:
                    # fell out of the history window while we were slow
                    self.send_event("ERROR", status(410, "Expired", "too old resource version: %d (%d)"
                                                    % (pos, store.floor)))
                    break
                for ev in evs:
                    self.send_event(ev[1], ev[5])
                    pos = ev[0]
                now = time.time()
                if bookmarks and (now >= next_bm or (final_bm is not None and now >= final_bm)):
                    if final_bm is not None and now >= final_bm:
                        final_bm = None
                    next_bm = now + st.bookmark_interval
                    with store.cond:
                        # every matching event up to store.rv has been sent
                        # once no newer one is pending
                        pending = bool(store.newer(pos, matches))
                        if not pending:
                            pos = max(pos, store.rv)
                            self.send_event("BOOKMARK", self.bookmark_object(kind, pos))
                if now >= deadline:
                    break
                if self.client_gone():
                    self.close_connection = True
                    raise Abort()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True
            raise Abort()
        finally:
            self.entry["end"] = time.time()
            with st.lock:
                st.watches.pop(wid, None)
            with store.cond:
                store.waiters.pop(wid, None)


# ---------------------------------------------------------------------------
# objects

def make_secret(ns, name, osc, checksum="auto", labels=None, annotations=None, data=None):
    ann = dict(annotations or {})
    d = dict(data or {})
    if osc is not None:
        osc_b = osc.encode() if isinstance(osc, str) else osc
        d["osc.yaml"] = base64.b64encode(osc_b).decode()
        real = hashlib.sha256(osc_b).hexdigest()
        if checksum == "auto":
            ann["checksum/data-script"] = real
        elif checksum == "wrong":
            ann["checksum/data-script"] = hashlib.sha256(osc_b + b"tampered").hexdigest()
        elif checksum not in ("none", None):
            ann["checksum/data-script"] = checksum
    md = {"name": name, "namespace": ns}
    lab = {"gardener.cloud/role": "operating-system-config"}
    lab.update(labels or {})
    md["labels"] = lab
    if ann:
        md["annotations"] = ann
    return {"kind": "Secret", "apiVersion": "v1", "metadata": md, "data": d, "type": "Opaque"}


def csr_publish(st, name):
    """Writes the CSR into the store (a new resourceVersion and a watch
    event); returns the stored copy."""
    with st.lock:
        o = copy.deepcopy(st.csrs[name])
    stored, _ = st.store.put("CertificateSigningRequest", None, name, o)
    with st.lock:
        st.csrs[name]["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
    return stored


def set_condition(st, name, typ, reason, message, cert=None):
    with st.lock:
        o = st.csrs[name]
        o.setdefault("status", {}).setdefault("conditions", []).append(
            {"type": typ, "status": "True", "reason": reason, "message": message,
             "lastUpdateTime": now_ts(), "lastTransitionTime": now_ts()})
        if cert is not None:
            o["status"]["certificate"] = base64.b64encode(cert).decode()
    csr_publish(st, name)


def openssl(*args, data=None):
    import subprocess
    r = subprocess.run(("openssl",) + args, input=data, capture_output=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("openssl %s: %s" % (args[0], r.stderr.decode(errors="replace").strip()))
    return r.stdout


def long_csr(cn, orgs):
    """(key PEM, request PEM): a new P-256 key and a certification request
    for CN and the Os, each its own RDN, a CN of any length as Go writes it
    (openssl req and cryptography's checks stop at 64 characters, which no
    machine name of a real shoot fits in with node-agent's prefix)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import warnings
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn, _validate=False))
    req = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attrs)).sign(key, hashes.SHA256())
    return (key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()), req.public_bytes(serialization.Encoding.PEM))


def na_request(machine):
    """long_csr() with node-agent's subject for machine."""
    return long_csr(NA_PREFIX + machine, [NA_GROUP])


def csr_subject(pem):
    """(CN, [O]) of a PEM certification request."""
    out = openssl("req", "-noout", "-subject", "-nameopt", "sep_multiline,sname,utf8", data=pem).decode()
    cn, orgs = None, []
    for line in out.splitlines()[1:]:
        k, _, v = line.strip().partition("=")
        if k == "CN":
            cn = v
        elif k == "O":
            orgs.append(v)
    return cn, orgs


def decide_csr(st, name, o, pem):
    """Gardener's approver (csrapprover/reconciler.go mustApproveGardenerNodeAgentCSR)
    plus the test modes; approves and signs, or denies."""
    mode = st.csr_mode
    if mode == "never":
        return
    if mode == "deny":
        set_condition(st, name, "Denied", "RequestDenied", "Denying gardener-node-agent certificate CSR (test)")
        return
    if mode == "fail":
        set_condition(st, name, "Failed", "SignerValidationFailure", "test failure")
        return
    cn, orgs = csr_subject(pem)
    if not cn or not cn.startswith(NA_PREFIX):
        return    # no opinion: stays pending
    machine = cn[len(NA_PREFIX):]
    user = o["spec"]["username"]
    why = None
    if machine not in st.machines:
        why = 'machine "%s" does not exist' % machine
    elif user.startswith("system:bootstrap:"):
        node = st.machines[machine]
        if node and st.store.get("Node", None, node) is not None:
            why = ('Cannot use bootstrap token since gardener-node-agent for machine "%s" is already bootstrapped'
                   % machine)
    elif user.startswith(NA_PREFIX):
        if user != cn:
            why = 'username "%s" and commonName "%s" do not match' % (user, cn)
    else:
        why = 'username "%s" is not allowed to create CSRs for a gardener-node-agent' % user
    if why:
        set_condition(st, name, "Denied", "RequestDenied", "Denying gardener-node-agent certificate CSR (%s)" % why)
        return
    set_condition(st, name, "Approved", "RequestApproved",
                  "Approving gardener-node-agent certificate CSR (all checks passed)")
    lifetime = st.csr_lifetime or int(o["spec"].get("expirationSeconds") or 86400)
    cert = sign_csr(st, pem, mode, lifetime)
    with st.lock:
        st.csrs[name]["status"]["certificate"] = base64.b64encode(cert).decode()
    csr_publish(st, name)


def sign_csr(st, pem, mode, lifetime):
    """Signs with `openssl ca` (seconds-exact validity); returns PEM."""
    import tempfile
    pki = st.args.pki
    ca = "other-ca" if mode == "other-ca" else "ca"
    with tempfile.TemporaryDirectory() as d:
        fmt = lambda t: time.strftime("%Y%m%d%H%M%SZ", time.gmtime(t))
        now = time.time()
        start, end = (now - 7200, now - 3600) if mode == "expired" else \
            (now + 3600, now + 3600 + lifetime) if mode == "future" else (now - 5, now + lifetime)
        subj = None
        if mode == "wrong-cn":
            subj = "/O=%s/CN=%sanother-machine" % (NA_GROUP, NA_PREFIX)
        if mode == "wrong-key":
            # A request with the same subject for a key the client never had.
            pem = long_csr(*csr_subject(pem))[1]
        with open(os.path.join(d, "req.pem"), "wb") as fh:
            fh.write(pem)
        open(os.path.join(d, "index.txt"), "w").close()
        with open(os.path.join(d, "serial"), "w") as fh:
            fh.write("%016X\n" % int.from_bytes(os.urandom(7), "big"))
        with open(os.path.join(d, "ca.cnf"), "w") as fh:
            fh.write("[ca]\ndefault_ca = t\n[t]\ndir = %s\ndatabase = $dir/index.txt\nserial = $dir/serial\n"
                     "new_certs_dir = $dir\ndefault_md = sha256\npolicy = any\nunique_subject = no\n"
                     "copy_extensions = none\n[any]\norganizationName = optional\ncommonName = supplied\n"
                     "[ext]\nbasicConstraints = critical,CA:FALSE\n"
                     "keyUsage = critical,digitalSignature,keyEncipherment\nextendedKeyUsage = clientAuth\n" % d)
        args = ["ca", "-batch", "-config", os.path.join(d, "ca.cnf"), "-in", os.path.join(d, "req.pem"),
                "-cert", os.path.join(pki, ca + ".crt"), "-keyfile", os.path.join(pki, ca + ".key"),
                "-startdate", fmt(start), "-enddate", fmt(end), "-extensions", "ext", "-notext",
                "-preserveDN", "-out", os.path.join(d, "cert.pem")]
        if subj:
            args += ["-subj", subj]
        openssl(*args)
        with open(os.path.join(d, "cert.pem"), "rb") as fh:
            return fh.read()


def make_node(name):
    # The kubelet's hostname label: a label value (63 at most); a Node named
    # longer (a cloud provider's name) has its host's short name there.
    host = name if len(name) <= 63 else name.split(".")[0][:63]
    return {"kind": "Node", "apiVersion": "v1",
            "metadata": {"name": name,
                         "labels": {"kubernetes.io/hostname": host, "kubernetes.io/os": "linux",
                                    "worker.gardener.cloud/pool": "worker-a"},
                         "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {"podCIDR": "10.244.0.0/24"},
            "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                                     {"type": "Hostname", "address": host}],
                       "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                                    "osImage": "Debian GNU/Linux 12 (bookworm)", "containerRuntimeVersion": "",
                                    "kubeletVersion": "v1.20.2", "kubeProxyVersion": "v1.20.2",
                                    "operatingSystem": "linux", "architecture": "amd64"}}}


# ---------------------------------------------------------------------------
# the control interface

class ControlServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class ControlHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, obj):
        body = json.dumps(obj, indent=1).encode() + b"\n"
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.handle_ctl({})

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b"{}"
        try:
            req = json.loads(raw or b"{}")
        except ValueError as e:
            self.reply(400, {"error": "bad JSON: %s" % e})
            return
        self.handle_ctl(req)

    def handle_ctl(self, req):
        st = self.server.state
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        p = url.path
        store = st.store
        try:
            if p == "/healthz":
                self.reply(200, {"ok": True, "up": st.api is not None, "rv": store.rv})
            elif p == "/secret" and self.command == "GET":
                o = store.get("Secret", q.get("namespace", "kube-system"), q["name"])
                self.reply(200 if o else 404, o or {"error": "not found"})
            elif p == "/secret":
                ns = req.get("namespace", "kube-system")
                name = req["name"]
                if req.get("delete"):
                    o = store.delete("Secret", ns, name)
                    self.reply(200 if o else 404, {"t": time.time(), "resourceVersion": store.rv})
                    return
                osc = req.get("osc")
                if req.get("oscFile"):
                    with open(req["oscFile"], "rb") as fh:
                        osc = fh.read()
                obj = make_secret(ns, name, osc, req.get("checksum", "auto"), req.get("labels"),
                                  req.get("annotations"), req.get("data"))
                cur = store.get("Secret", ns, name)
                if cur is not None:
                    for k in ("uid", "creationTimestamp"):
                        obj["metadata"][k] = cur["metadata"][k]
                t = time.time()
                stored, changed = store.put("Secret", ns, name, obj)
                self.reply(200, {"t": t, "resourceVersion": stored["metadata"]["resourceVersion"],
                                 "changed": changed,
                                 "checksum": (stored["metadata"].get("annotations") or {}).get("checksum/data-script")})
            elif p == "/node" and self.command == "GET":
                o = store.get("Node", None, q["name"])
                self.reply(200 if o else 404, o or {"error": "not found"})
            elif p == "/node":
                name = req["name"]
                if req.get("delete"):
                    o = store.delete("Node", None, name)
                    self.reply(200 if o else 404, {"t": time.time()})
                    return
                with store.cond:
                    cur = store.get("Node", None, name) or make_node(name)
                    patch = {"metadata": {}}
                    for f in ("annotations", "labels"):
                        if f in req:
                            patch["metadata"][f] = req[f]
                    if "status" in req:  # the kubelet's part (e.g. conditions), merged in
                        patch["status"] = req["status"]
                    new = merge_patch(cur, patch)
                    for f in ("annotations", "labels"):
                        if f in new["metadata"] and not new["metadata"][f]:
                            del new["metadata"][f]
                    t = time.time()
                    stored, changed = store.put("Node", None, name, new)
                self.reply(200, {"t": t, "resourceVersion": stored["metadata"]["resourceVersion"],
                                 "changed": changed})
            elif p == "/pods":
                # {"<ns>/<name>": "<spec.nodeName>"} of every Pod
                items, _ = store.list("Pod", None, None)
                self.reply(200, {"%s/%s" % (o["metadata"]["namespace"], o["metadata"]["name"]):
                                 (o.get("spec") or {}).get("nodeName") for o in items})
            elif p == "/pod":
                # {"namespace", "name", "node"}: a Pod bound to node (as the
                # scheduler or a DaemonSet controller makes it); "delete": true
                ns, name = req.get("namespace", "default"), req["name"]
                if req.get("delete"):
                    o = store.delete("Pod", ns, name)
                    self.reply(200 if o else 404, {"t": time.time()})
                    return
                obj = {"kind": "Pod", "apiVersion": "v1",
                       "metadata": {"name": name, "namespace": ns, "uid": str(uuid.uuid4()),
                                    "creationTimestamp": now_ts()},
                       "spec": {"nodeName": req.get("node"), "containers": [{"name": "c", "image": "pause"}]},
                       "status": {"phase": "Running"}}
                stored, _ = store.put("Pod", ns, name, obj)
                self.reply(200, {"t": time.time(), "resourceVersion": stored["metadata"]["resourceVersion"]})
            elif p == "/annotations":
                # {"values": {node: value of annotation KEY or null}} for every Node (a fleet's progress)
                items, _ = store.list("Node", None, None)
                self.reply(200, {"t": time.time(), "values": {o["metadata"]["name"]: (o["metadata"].get(
                    "annotations") or {}).get(q["key"]) for o in items}})
            elif p == "/events":
                items, _ = store.list("Event", q.get("namespace", "default"), None)
                self.reply(200, {"items": items})
            elif p == "/leases":
                items, _ = store.list("Lease", q.get("namespace", "kube-system"), None)
                self.reply(200, {"items": items})
            elif p == "/lease":
                # {"namespace", "name", "spec": {...} merged in, "delete": bool}: another writer
                ns, name = req.get("namespace", "kube-system"), req["name"]
                if req.get("delete"):
                    o = store.delete("Lease", ns, name)
                    self.reply(200 if o else 404, {"t": time.time()})
                    return
                with store.cond:
                    cur = store.get("Lease", ns, name) or {"kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
                                                           "metadata": {"name": name, "namespace": ns}, "spec": {}}
                    stored, _ = store.put("Lease", ns, name, merge_patch(cur, {"spec": req.get("spec", {})}))
                self.reply(200, stored)
            elif p == "/log":
                since = float(q.get("since", 0))
                with st.lock:
                    entries = [dict(e) for e in st.log if e["t"] >= since]
                self.reply(200, {"now": time.time(), "requests": entries})
            elif p == "/watches":
                with st.lock:
                    self.reply(200, {"now": time.time(), "watches": list(st.watches.values())})
            elif p == "/annotation-history":
                with store.cond:
                    h = list(store.ann_history.get((q["node"], q["key"]), []))
                self.reply(200, [{"t": t, "value": v, "rv": rv} for t, v, rv in h])
            elif p == "/wait-annotation":
                node, key, value = q["node"], q["key"], q.get("value")
                absent = q.get("absent") in ("1", "true")
                since = float(q.get("since", 0))
                deadline = time.time() + float(q.get("timeout", 10))
                hit = []
                with store.cond:
                    while True:
                        hit = [t for t, v, rv in store.ann_history.get((node, key), [])
                               if t >= since and ((v is None) if absent else (value is None or v == value))]
                        left = deadline - time.time()
                        if hit or left <= 0:
                            break
                        store.cond.wait(min(left, 0.5))
                self.reply(200, {"ok": bool(hit), "t": hit[0] if hit else None})
            elif p == "/fault":
                f = dict(req)
                f["count"] = int(f.get("count", 1))
                if f.get("type") not in ("500", "429", "reset", "hang", "blackhole", "oversize", "badjson", "410", "undo", "blank",
                                         "slow"):
                    self.reply(400, {"error": "unknown fault type %r" % f.get("type")})
                    return
                with st.lock:
                    st.faults.append(f)
                self.reply(200, {"ok": True, "t": time.time()})
            elif p == "/clear-faults":
                with st.lock:
                    st.faults = []
                    st.fault_gen += 1
                self.reply(200, {"ok": True, "t": time.time()})
            elif p == "/reset-watches":
                with st.lock:
                    st.reset_gen += 1
                    n = len(st.watches)
                with store.cond:
                    store.wake_all()
                self.reply(200, {"ok": True, "watches": n, "t": time.time()})
            elif p == "/expire":
                store.expire()
                self.reply(200, {"ok": True, "floor": store.floor, "t": time.time()})
            elif p == "/down":
                st.down()
                self.reply(200, {"ok": True, "t": time.time()})
            elif p == "/up":
                st.up()
                self.reply(200, {"ok": True, "t": time.time()})
            elif p == "/restart":
                st.down()
                if "tls" in req:
                    if req["tls"] not in ("good", "other-ca", "wrong-host"):
                        self.reply(400, {"error": "tls: good, other-ca or wrong-host"})
                        return
                    st.tls_mode = req["tls"]
                store.expire()
                st.up()
                self.reply(200, {"ok": True, "tls": st.tls_mode, "floor": store.floor, "t": time.time()})
            elif p == "/policy":
                with st.lock:
                    if "allowSecret" in req:
                        st.secret_readers.add(req["allowSecret"])
                    if "revokeSecret" in req:
                        st.secret_readers.discard(req["revokeSecret"])
                    self.reply(200, {"secretReaders": sorted(st.secret_readers)})
            elif p == "/csr-mode":
                with st.lock:
                    st.csr_mode = req.get("mode", "gardener")
                    st.csr_lifetime = req.get("lifetime")
                    st.csr_watch = bool(req.get("watch", True))
                    st.csr_delay = float(req.get("delay", 0))
                self.reply(200, {"mode": st.csr_mode, "lifetime": st.csr_lifetime,
                                 "watch": st.csr_watch, "delay": st.csr_delay})
            elif p == "/csrs":
                with st.lock:
                    self.reply(200, copy.deepcopy(st.csrs))
            elif p == "/config":
                if "bookmarkInterval" in req:
                    st.bookmark_interval = float(req["bookmarkInterval"])
                self.reply(200, {"bookmarkInterval": st.bookmark_interval})
            else:
                self.reply(404, {"error": "no such control endpoint %s" % p})
        except (KeyError, ValueError, OSError) as e:
            self.reply(400, {"error": "%s: %s" % (type(e).__name__, e)})


# ---------------------------------------------------------------------------

def serve(args):
    st = State(args)
    for n in args.node:
        st.store.put("Node", None, n, make_node(n))
    for s in args.secret:
        where, _, path = s.partition("=")
        ns, _, name = where.partition("/")
        with open(path, "rb") as fh:
            st.store.put("Secret", ns, name, make_secret(ns, name, fh.read()))
    # The initial objects stay in the history (as if the server had been
    # running for a while): a watch from the RV of a GET works; /restart and
    # /expire forget it, like a real restart of the watch cache.
    st.up()
    host, port = args.control.rsplit(":", 1)
    ctl = ControlServer((host, int(port)), ControlHandler)
    ctl.state = st
    if args.ready_file:
        tmp = args.ready_file + ".tmp"
        with open(tmp, "w") as fh:
            fh.write("%d\n" % os.getpid())
        os.rename(tmp, args.ready_file)
    if args.verbose:
        print("kube-apiserver.py: API on https://%s, control on http://%s" % (args.listen, args.control),
              file=sys.stderr, flush=True)
    try:
        ctl.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass


def ctl_main(args):
    host, port = args.control.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=args.timeout)
    body = None
    headers = {}
    if args.json is not None:
        body = args.json.encode()
        headers["Content-Type"] = "application/json"
    elif args.method == "POST":
        body = b"{}"
        headers["Content-Type"] = "application/json"
    try:
        c.request(args.method, args.path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
    except OSError as e:
        print("kube-apiserver.py ctl: %s %s: %s" % (args.method, args.path, e), file=sys.stderr)
        return 2
    sys.stdout.write(data.decode())
    return 0 if 200 <= r.status < 300 else 1


def main():
    ap = argparse.ArgumentParser(description="TLS test kube-apiserver for node-agent's tests")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--pki", required=True)
    s.add_argument("--listen", default=API_DEFAULT)
    s.add_argument("--control", default=CONTROL_DEFAULT)
    s.add_argument("--token", action="append", default=[])
    s.add_argument("--bootstrap-token", action="append", default=[])
    s.add_argument("--secret-reader", action="append", default=[])
    s.add_argument("--node-admin", action="append", default=[])
    s.add_argument("--admin", action="append", default=[])
    s.add_argument("--node", action="append", default=[])
    s.add_argument("--secret", action="append", default=[])
    s.add_argument("--machine", action="append", default=[])
    s.add_argument("--bookmark-interval", type=float, default=60.0)
    s.add_argument("--history", type=int, default=1000)
    s.add_argument("--start-rv", type=int, default=100)
    s.add_argument("--tls", choices=("good", "other-ca", "wrong-host"), default="good")
    s.add_argument("--ready-file")
    s.add_argument("--verbose", "-v", action="store_true")
    c = sub.add_parser("ctl")
    c.add_argument("--control", default=os.environ.get("KUBE_CONTROL", CONTROL_DEFAULT))
    c.add_argument("--timeout", type=float, default=120)
    c.add_argument("method", choices=("GET", "POST"))
    c.add_argument("path")
    c.add_argument("json", nargs="?")
    args = ap.parse_args()
    if args.cmd == "serve":
        serve(args)
        return 0
    return ctl_main(args)


if __name__ == "__main__":
    sys.exit(main())
