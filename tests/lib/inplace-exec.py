#!/usr/bin/env python3
"""A stand-in for cloud-config-exec's in-place update (tests 078, 079):
writes result.json (lib/node/result.h) for desired.json's checksum and
generation. CONTROL (absent: no in-place update) says what the update does
once desired.json has inPlaceUpdate.readyForUpdate true:
{"kinds": [...], "outcome": "successful"|"failed"|"running",
 "reason": "...", "os": "<version>"}; before that the state is "waiting".
An update that ended successfully stays so for its checksum.
Usage: inplace-exec.py RESULT DESIRED CONTROL"""
import json, os, sys, time
res, des, ctl = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
d = {"version": 1, "checksum": des["checksum"], "generation": des["generation"], "success": True,
     "changedUnits": [], "finishedAt": int(time.time())}
if os.path.exists(ctl):
    c = json.load(open(ctl))
    ready = des.get("inPlaceUpdate", {}).get("readyForUpdate", False)
    state = c["outcome"] if ready else "waiting"
    # an update that ended successfully stays so for its OSC
    try:
        old = json.load(open(res))
        if old["checksum"] == d["checksum"] and old.get("inPlaceUpdate", {}).get("state") == "successful":
            state = "successful"
    except (OSError, ValueError, KeyError):
        pass
    ip = {"kinds": c["kinds"], "state": state}
    if "os" in c:
        ip["osVersion"] = {"desired": c["os"], "running": "1443.3"}
    if state == "waiting":
        d.update(success=False, failedStep="inplace-waiting")
    elif state == "running":
        d.update(success=False, failedStep="inplace-os-update")
    elif state == "failed":
        d.update(success=False, failedStep="inplace-os-update", error=c["reason"])
        ip["reason"] = c["reason"]
    d["inPlaceUpdate"] = ip
tmp = res + ".tmp"
open(tmp, "w").write(json.dumps(d))
os.rename(tmp, res)
