#!/usr/bin/python3
"""Runs many sesearch-style queries against one policy in one process
(sesearch loads the 2 MB policy anew for every call, about a second each).

  sesearch-batch.py POLICY < assertions

Each input line is  KIND ARGS...  with KIND one of
  want     at least one rule matches
  deny     no rule matches
  uncond   no rule matches outside a conditional (boolean/tunable) block
  confined TYPE...: each TYPE is neither permissive nor in the attribute
           unconfined_domain_type (the base policy's unconfined_domain())
and ARGS a subset of sesearch's: -A (allow) | -T (type_transition),
-s SOURCE, -t TARGET, -c CLASS[,CLASS], -p PERM[,PERM] (any of them),
-b BOOLEAN. Source and target match indirectly (through attributes), as
sesearch does by default. Prints "ok KIND ARGS" or "not ok KIND ARGS" and,
for a failed deny/uncond, the first offending rules prefixed with "#   ".
Blank lines are skipped, lines starting with # are printed.
"""
import shlex
import sys

import setools


def query(policy, args):
    kw = {"ruletype": ["allow"]}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-A":
            kw["ruletype"] = ["allow"]
        elif a == "-T":
            kw["ruletype"] = ["type_transition"]
        else:
            v = args[i + 1]
            i += 1
            if a == "-s":
                kw["source"] = v
            elif a == "-t":
                kw["target"] = v
            elif a == "-c":
                kw["tclass"] = v.split(",")
            elif a == "-p":
                kw["perms"] = v.split(",")
            elif a == "-b":
                kw["boolean"] = [v]
            elif a == "-D":
                kw["default"] = v
            else:
                raise SystemExit("unknown option " + a)
        i += 1
    return list(setools.TERuleQuery(policy, **kw).results())


def conditional(rule):
    try:
        rule.conditional
        return True
    except Exception:
        return False


def main():
    policy = setools.SELinuxPolicy(sys.argv[1])
    bad = 0
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            print(line)
            continue
        kind, *args = shlex.split(line)
        if kind == "confined":
            why = []
            for name in args:
                t = policy.lookup_type(name)
                if any(a.name == "unconfined_domain_type" for a in t.attributes()):
                    why.append(name + " unconfined")
                if t.ispermissive:
                    why.append(name + " permissive")
            print(("not ok " if why else "ok ") + line + (" (" + ", ".join(why) + ")" if why else ""))
            bad += bool(why)
            continue
        rules = query(policy, args)
        if kind == "uncond":
            rules = [r for r in rules if not conditional(r)]
        good = bool(rules) if kind == "want" else not rules
        print(("ok " if good else "not ok ") + line)
        if not good:
            bad += 1
            for r in rules[:3]:
                print("#   " + str(r))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
