#!/usr/bin/env python3
"""Gardener's node-agent authorizer as a test peer: a SubjectAccessReview v1
webhook for the real kube-apiserver (--authorization-mode=Node,Webhook,RBAC,
--authorization-webhook-config-file, --authorization-webhook-version=v1).

The rules are gardener/gardener's
pkg/resourcemanager/webhook/nodeagentauthorizer/authorizer.go (HEAD b312835,
2026-08-21) and identity.go, read there and written anew here:

- identity.go GetNodeAgentIdentity: a node-agent is a user named
  "gardener.cloud:node-agent:machine:<machine>" in group
  "gardener.cloud:node-agents"; anyone else gets no opinion (RBAC decides).
  An empty machine name is denied.
- getNode: the Node of the machine. With Machine objects (a seed) it is the
  Machine's "node" label; here there are none: --machine M=N stands for the
  Machine M's label (default: the Node is named like the machine, the
  gardenadm case, machineNamespace nil). No Node: denied ("no node for ...").
- certificatesigningrequests (certificates.k8s.io): no subresource; get,
  create; get only of a CSR whose spec.username is the requesting user.
- events ("" and events.k8s.io): no subresource; create, patch.
- leases (coordination.k8s.io): no subresource; get, list, watch, create,
  update (no patch, no delete); the Node must exist; namespace kube-system;
  except for create, only "gardener-node-agent-<node>" and the name in the
  Node's label worker.gardener.cloud/gardener-node-agent-secret-name
  (authorizeLease, allowedLeases; the second is the serial rollout Lease,
  named like the OSC Secret: pkg/nodeagent/controller/operatingsystemconfig/
  serial.go newLeaderElectorForSecret). The subresource is checked first,
  then the verb, then the Node, as there.
- nodes: subresource none or status; get, list, watch, patch, update; list
  and watch of any Node; the others only of the own Node (which must exist).
- pods: no subresource; get, list, watch, delete; the Node must exist; list
  and watch allowed (v1.20's SubjectAccessReview carries no field selector,
  so authorizeWithSelectors cannot apply); get and delete only of a Pod
  whose spec.nodeName is the Node.
- secrets: no subresource; get, list, watch; namespace kube-system; the
  token secrets (gardener-valitail, gardener-opentelemetry-collector,
  shoot-access-kube-controller-manager, shoot-access-kube-scheduler,
  shoot-access-cluster-admin), plus: while the Node does
  not exist every OSC Secret (label worker.gardener.cloud/pool present) and
  the secretRef'd secrets of their OSC; once it exists the OSC Secret named by
  the Node's label worker.gardener.cloud/gardener-node-agent-secret-name (if
  it is an OSC Secret) and its secretRef'd secrets (files[].content.secretRef
  whose hostName is unset or the Node's kubernetes.io/hostname).
- everything else, non-resource URLs included: denied.

The webhook reads the cluster as the admin (static token: system:masters,
which the API server authorizes before any authorizer). As Gardener's, whose
reads go to gardener-resource-manager's informer cache (the manager's cached
client; cmd/gardener-resource-manager/app/app.go), it decides on a cache: one
list and watch each of the Nodes and of the OSC Secrets (label
worker.gardener.cloud/pool, in kube-system), their secretRefs decoded once per
change, relisted after a watch ends; a decision asks the API server nothing
(reading the cluster for every decision made this stand-in, not the agents,
the bottleneck of the fleet bench's 1,000 nodes). A decision before the first
list waits for it (up to 10 s; then denied, as an error). The rare CSR and Pod
reads still go to the API server (their rules need the object; Gardener's
cache holds those too). Every decision is
appended to --log as one JSON line (user, verb, resource, name, decision,
reason). Serves HTTPS on --listen (loopback) with --cert/--key.
"""
import argparse
import base64
import http.client
import json
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml

USER_PREFIX = "gardener.cloud:node-agent:machine:"
GROUP = "gardener.cloud:node-agents"
LABEL_SECRET_NAME = "worker.gardener.cloud/gardener-node-agent-secret-name"
LABEL_POOL = "worker.gardener.cloud/pool"
LABEL_HOSTNAME = "kubernetes.io/hostname"
TOKEN_SECRETS = ["gardener-valitail", "gardener-opentelemetry-collector",
                 "shoot-access-kube-controller-manager", "shoot-access-kube-scheduler",
                 "shoot-access-cluster-admin"]  # adminaccess.ShootAccessSecretNameSuffix


class Denied(Exception):
    pass


class Cluster:
    def __init__(self, server, ca, token):
        self.server = server.rstrip("/")
        self.ctx = ssl.create_default_context(cafile=ca)
        self.token = token
        self.local = threading.local()

    def get(self, path):
        """The object at path, or None on 404; raises on anything else. One
        keep-alive connection per thread, opened again once when it fails:
        Gardener's authorizer reads an informer cache and asks the API server
        nothing; a TLS handshake per decision would be this stand-in's cost,
        not Gardener's (the fleet bench's 1,000 nodes)."""
        hdr = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
        for attempt in (0, 1):
            c = getattr(self.local, "conn", None)
            if c is None:
                u = urllib.parse.urlsplit(self.server)
                c = self.local.conn = http.client.HTTPSConnection(u.hostname, u.port or 443, context=self.ctx,
                                                                   timeout=5)
            try:
                c.request("GET", path, headers=hdr)
                r = c.getresponse()
                body = r.read()
            except (OSError, http.client.HTTPException):
                c.close()
                self.local.conn = None
                if attempt:
                    raise
                continue
            if r.status == 404:
                return None
            if r.status != 200:
                raise RuntimeError("GET %s: HTTP %d" % (path, r.status))
            return json.loads(body)


def labels(obj):
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


class Informer:
    """A list+watch cache of one collection (path), as a controller-runtime
    informer: name -> conv(object). After any end of the watch (timeout, the
    API server restarting, an ERROR event) it lists again; meanwhile the last
    view answers."""

    def __init__(self, cluster, path, conv):
        self.c, self.path, self.conv = cluster, path, conv
        self.items = {}
        self.synced = threading.Event()
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        u = urllib.parse.urlsplit(self.c.server)
        hdr = {"Authorization": "Bearer " + self.c.token, "Accept": "application/json"}
        sep = "&" if "?" in self.path else "?"
        while True:
            conn = None
            try:
                conn = http.client.HTTPSConnection(u.hostname, u.port or 443, context=self.c.ctx, timeout=660)
                conn.request("GET", self.path, headers=hdr)
                r = conn.getresponse()
                body = r.read()
                if r.status != 200:
                    raise RuntimeError("list %s: HTTP %d" % (self.path, r.status))
                lst = json.loads(body)
                self.items = {o["metadata"]["name"]: self.conv(o) for o in lst.get("items") or []}
                self.synced.set()
                conn.request("GET", self.path + sep + "watch=1&allowWatchBookmarks=true&timeoutSeconds=600"
                             "&resourceVersion=" + lst["metadata"]["resourceVersion"], headers=hdr)
                r = conn.getresponse()
                while r.status == 200:
                    line = r.readline()
                    if not line:
                        break
                    e = json.loads(line)
                    o = e.get("object") or {}
                    if e.get("type") in ("ADDED", "MODIFIED"):
                        self.items[o["metadata"]["name"]] = self.conv(o)
                    elif e.get("type") == "DELETED":
                        self.items.pop(o["metadata"]["name"], None)
                    elif e.get("type") == "ERROR":
                        break
            except Exception:
                time.sleep(0.5)
            finally:
                if conn is not None:
                    conn.close()

    def get(self, name=None):
        """The entry named name (None: absent), or with no name all entries."""
        if not self.synced.wait(10):
            raise RuntimeError("cache of %s not synced" % self.path)
        items = self.items
        return list(items.values()) if name is None else items.get(name)


def node_entry(o):
    md = o.get("metadata") or {}
    return {"metadata": {"name": md.get("name"), "labels": md.get("labels") or {}}}


def secret_entry(o):
    """An OSC Secret's name and its files' (secretRef name, hostName) pairs,
    or the error decoding them (raised when the Secret is consulted)."""
    try:
        refs = secret_file_refs(o)
    except Exception as e:
        refs = e
    return {"metadata": {"name": (o.get("metadata") or {}).get("name")}, "refs": refs}


class Authorizer:
    def __init__(self, cluster, machines):
        self.c = cluster
        self.machines = machines
        self.nodes = Informer(cluster, "/api/v1/nodes", node_entry)
        self.oscs = Informer(cluster, "/api/v1/namespaces/kube-system/secrets?" +
                             urllib.parse.urlencode({"labelSelector": LABEL_POOL}), secret_entry)

    def node(self, machine):
        n = self.nodes.get(self.machines.get(machine, machine))
        if n is None:
            raise Denied('no node for "%s" found' % machine)
        return n

    @staticmethod
    def check(attrs, verbs, subresources=()):
        sub = attrs.get("subresource", "")
        if sub and sub not in subresources:
            raise Denied("only the following subresources are allowed for this resource type: %s" % list(subresources))
        if attrs.get("verb") not in verbs:
            raise Denied("only the following verbs are allowed for this resource type: %s" % list(verbs))

    def authorize(self, spec):
        user, groups = spec.get("user", ""), spec.get("groups") or []
        if not user.startswith(USER_PREFIX) or GROUP not in groups:
            return None  # no opinion
        machine = user[len(USER_PREFIX):]
        if not machine:
            raise Denied("")
        a = spec.get("resourceAttributes")
        if not a:
            raise Denied("")
        gr = (a.get("group", ""), a.get("resource", ""))
        verb, name, ns = a.get("verb"), a.get("name", ""), a.get("namespace", "")
        if gr == ("certificates.k8s.io", "certificatesigningrequests"):
            self.check(a, ("get", "create"))
            if verb == "get":
                csr = self.c.get("/apis/certificates.k8s.io/v1/certificatesigningrequests/" + name)
                if csr is None:
                    raise Denied("CSR %s not found" % name)
                if csr["spec"].get("username") != user:
                    raise Denied('gardener-node-agent is only allowed to read or request CSRs for its own user "%s"' % user)
            return True
        if gr in (("", "events"), ("events.k8s.io", "events")):
            self.check(a, ("create", "patch"))
            return True
        if gr == ("coordination.k8s.io", "leases"):
            self.check(a, ("get", "list", "watch", "create", "update"))
            node = self.node(machine)
            allowed = ["gardener-node-agent-" + node["metadata"]["name"]]
            if labels(node).get(LABEL_SECRET_NAME):
                allowed.append(labels(node)[LABEL_SECRET_NAME])
            if (verb != "create" and name not in allowed) or ns != "kube-system":
                raise Denied('this gardener-node-agent can only access leases %s in "kube-system" namespace' % allowed)
            return True
        if gr == ("", "nodes"):
            self.check(a, ("get", "list", "watch", "patch", "update"), ("status",))
            if verb in ("list", "watch"):
                return True
            node = self.node(machine)
            if name != node["metadata"]["name"]:
                raise Denied('this gardener-node-agent can only access node "%s"' % node["metadata"]["name"])
            return True
        if gr == ("", "pods"):
            self.check(a, ("get", "list", "watch", "delete"))
            node = self.node(machine)
            if verb in ("list", "watch"):
                return True
            pod = self.c.get("/api/v1/namespaces/%s/pods/%s" % (ns, name))
            if pod is None or (pod.get("spec") or {}).get("nodeName") != node["metadata"]["name"]:
                raise Denied('pod "%s/%s" does not belong to node "%s"' % (ns, name, node["metadata"]["name"]))
            return True
        if gr == ("", "secrets"):
            self.check(a, ("get", "list", "watch"))
            valid = list(TOKEN_SECRETS)
            n = self.nodes.get(self.machines.get(machine, machine))
            oscs = self.oscs.get()
            if n is None:
                for s in oscs:
                    valid.append(s["metadata"]["name"])
                    valid += secret_refs(s, "")
            else:
                for s in oscs:
                    if s["metadata"]["name"] == labels(n).get(LABEL_SECRET_NAME):
                        valid.append(s["metadata"]["name"])
                        valid += secret_refs(s, labels(n).get(LABEL_HOSTNAME, ""))
                        break
            if name not in valid or ns != "kube-system":
                raise Denied('gardener-node-agent can only access secrets %s in "kube-system" namespace' % valid)
            return True
        raise Denied("")


def secret_file_refs(secret):
    """secretRefNamesFromOSCSecret (authorizer.go), its decoding: the
    (secretRef name, hostName or None) of files[].content.secretRef (spec.files
    and status.extensionFiles) of the OSC in data["osc.yaml"]; no osc.yaml:
    none; one that does not decode: an error."""
    raw = (secret.get("data") or {}).get("osc.yaml")
    if not raw:
        return []
    osc = yaml.safe_load(base64.b64decode(raw)) or {}
    files = list(((osc.get("spec") or {}).get("files") or [])) + list(((osc.get("status") or {}).get("extensionFiles") or []))
    out = []
    for f in files:
        ref = ((f or {}).get("content") or {}).get("secretRef")
        if ref:
            out.append((ref.get("name"), f.get("hostName")))
    return out


def secret_refs(entry, hostname):
    """... and its filter: the names for hostname ("" = every file); a Secret
    whose osc.yaml did not decode: an error (the request is denied, as
    Gardener's error is)."""
    if isinstance(entry["refs"], Exception):
        raise entry["refs"]
    # Gardener: hostname == "" || file.HostName == nil || *file.HostName == hostname;
    # an empty hostName is a pointer to "", not nil: it matches only hostname "".
    return [name for name, host in entry["refs"] if not hostname or host is None or host == hostname]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        try:
            review = json.loads(self.rfile.read(n))
            spec = review.get("spec") or {}
        except ValueError:
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        reason, status = "", {"allowed": False}
        try:
            d = self.server.authz.authorize(spec)
            decision = "noopinion" if d is None else "allow"
            if d:
                status = {"allowed": True}
        except Denied as e:
            decision, reason = "deny", str(e)
            status = {"allowed": False, "denied": True, "reason": reason}
        except Exception as e:  # an error reading the cluster: denied, as Gardener's errors are
            decision, reason = "deny", "error: %s" % e
            status = {"allowed": False, "denied": True, "reason": reason}
        a = spec.get("resourceAttributes") or spec.get("nonResourceAttributes") or {}
        line = json.dumps({"time": time.time(), "user": spec.get("user"), "verb": a.get("verb"),
                           "group": a.get("group"), "resource": a.get("resource"),
                           "subresource": a.get("subresource"), "namespace": a.get("namespace"),
                           "name": a.get("name"), "path": a.get("path"), "decision": decision, "reason": reason})
        with self.server.log_lock:
            self.server.log.write(line + "\n")
            self.server.log.flush()
        body = json.dumps({"apiVersion": review.get("apiVersion", "authorization.k8s.io/v1"),
                           "kind": "SubjectAccessReview", "status": status}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--listen", default="127.0.0.1:6446")
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--server", required=True, help="the API server, read as the admin")
    p.add_argument("--ca", required=True)
    p.add_argument("--token-file", required=True, help="the admin's bearer token")
    p.add_argument("--machine", action="append", default=[], help="MACHINE=NODE (the Machine's node label)")
    p.add_argument("--log", required=True)
    o = p.parse_args()
    host, port = o.listen.rsplit(":", 1)
    token = open(o.token_file).read().strip()
    machines = dict(m.split("=", 1) for m in o.machine)
    srv = ThreadingHTTPServer((host, int(port)), Handler)
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(o.cert, o.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.authz = Authorizer(Cluster(o.server, o.ca, token), machines)
    srv.log = open(o.log, "a")
    srv.log_lock = threading.Lock()
    print("listening on https://%s" % o.listen, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
