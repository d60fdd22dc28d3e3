#!/usr/bin/env python3
"""Checks a scratch root against two versions of an OSC (JSON as written by
gen-osc.py).

  exec-check.py either ROOT OLD.json NEW.json   every file is exactly the old
        or the new version (content and mode); a file in only one version is
        that version or absent. Prints "mixed" when some files are old and
        some new (the kill landed mid-apply), else "old", "new" or "same".
  exec-check.py exact ROOT OSC.json [OTHER.json]  every file is exactly as in
        OSC; files only in OTHER are gone; no temporary files are left.
Exit 1 with one line per violation.
"""
import base64, json, os, stat, sys

def load(path):
    with open(path) as f:
        osc = json.load(f)
    out = {}
    for fl in osc["spec"].get("files", []):
        inl = fl["content"]["inline"]
        data = inl["data"].encode()
        if inl.get("encoding") == "b64":
            data = base64.b64decode(data)
        out[fl["path"]] = (data, fl.get("permissions", 0o600))
    return out

def read(root, path):
    p = root + path
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return ("notreg", 0)
    with open(p, "rb") as f:
        return (f.read(), stat.S_IMODE(st.st_mode))

def temps(root, paths):
    dirs = {os.path.dirname(p) for p in paths}
    n = []
    for d in dirs:
        try:
            for e in os.listdir(root + d):
                if e.startswith(".#"):
                    n.append(d + "/" + e)
        except FileNotFoundError:
            pass
    return n

mode, root = sys.argv[1], sys.argv[2]
bad = []
if mode == "either":
    old, new = load(sys.argv[3]), load(sys.argv[4])
    seen_old = seen_new = False
    for p in sorted(set(old) | set(new)):
        cur = read(root, p)
        ok = []
        if p in old:
            ok.append(("old", old[p]))
        else:
            ok.append(("old", None))
        if p in new:
            ok.append(("new", new[p]))
        else:
            ok.append(("new", None))
        which = [w for w, v in ok if v == cur]
        if not which:
            bad.append(f"{p}: neither the old nor the new version")
        elif which == ["old"]:
            seen_old = True
        elif which == ["new"]:
            seen_new = True
    for b in bad:
        print(b)
    if bad:
        sys.exit(1)
    print("mixed" if seen_old and seen_new else "old" if seen_old else "new" if seen_new else "same")
elif mode == "exact":
    want = load(sys.argv[3])
    other = load(sys.argv[4]) if len(sys.argv) > 4 else {}
    for p, v in want.items():
        cur = read(root, p)
        if cur != v:
            bad.append(f"{p}: not as in the OSC")
    for p in other:
        if p not in want and read(root, p) is not None:
            bad.append(f"{p}: should have been removed")
    for t in temps(root, list(want) + list(other)):
        bad.append(f"{t}: temporary file left behind")
    for b in bad:
        print(b)
    sys.exit(1 if bad else 0)
else:
    sys.exit(2)
