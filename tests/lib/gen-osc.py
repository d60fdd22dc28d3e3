#!/usr/bin/env python3
"""Generates an OperatingSystemConfig (as JSON, which is YAML) for the
cloud-config-exec tests and benchmark.

  gen-osc.py --files N --units M [--version V] [--size BYTES] [--change I,J]
             [--drop I,J] [--keys FILE] [--prefix /etc/na-test]

File i is <prefix>/dir<i%5>/f<i>.conf; its content is derived from the
version (every file differs between versions) unless --change is given:
then only the listed files take the version, the others stay at version 1.
Unit j is na-test-u<j>.service with filePaths [file j]. Half the files are
base64-encoded. --keys puts FILE's content in /var/lib/gardener-user-authorized-keys.
"""
import argparse, base64, json, sys

ap = argparse.ArgumentParser()
ap.add_argument("--files", type=int, default=10)
ap.add_argument("--units", type=int, default=0)
ap.add_argument("--version", type=int, default=1)
ap.add_argument("--size", type=int, default=64)
ap.add_argument("--change", default="")
ap.add_argument("--drop", default="")
ap.add_argument("--keys", default="")
ap.add_argument("--prefix", default="/etc/na-test")
a = ap.parse_args()
change = {int(x) for x in a.change.split(",") if x}
drop = {int(x) for x in a.drop.split(",") if x}

def content(i, v):
    head = f"# file {i} version {v}\n"
    line = f"key{i}=value-{v}-" + "x" * 40 + "\n"
    body = head
    while len(body) < a.size:
        body += line
    return body[: max(a.size, len(head))]

files = []
for i in range(a.files):
    if i in drop:
        continue
    v = a.version if (not change or i in change) else 1
    data = content(i, v)
    f = {"path": f"{a.prefix}/dir{i % 5}/f{i}.conf", "permissions": 0o644 if i % 3 else 0o600}
    if i % 2:
        f["content"] = {"inline": {"encoding": "b64", "data": base64.b64encode(data.encode()).decode()}}
    else:
        f["content"] = {"inline": {"data": data}}
    files.append(f)
if a.keys:
    with open(a.keys) as kf:
        keys = kf.read()
    files.append({"path": "/var/lib/gardener-user-authorized-keys", "permissions": 0o644,
                  "content": {"inline": {"encoding": "b64", "data": base64.b64encode(keys.encode()).decode()}}})
units = []
for j in range(a.units):
    u = {"name": f"na-test-u{j}.service", "command": "start", "enable": True,
         "content": f"[Unit]\nDescription=test unit {j}\n[Service]\nType=oneshot\nExecStart=/bin/true\n"
                    "[Install]\nWantedBy=multi-user.target\n"}
    if j < a.files and j not in drop:
        u["filePaths"] = [f"{a.prefix}/dir{j % 5}/f{j}.conf"]
    units.append(u)
osc = {"apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "OperatingSystemConfig",
       "spec": {"type": "debian", "purpose": "reconcile", "files": files, "units": units}}
json.dump(osc, sys.stdout, indent=1)
sys.stdout.write("\n")
