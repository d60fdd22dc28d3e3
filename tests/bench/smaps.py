#!/usr/bin/env python3
"""Memory of one process from /proc/PID/smaps_rollup and /proc/PID/smaps.

smaps.py PID            one line: rss pss private private_dirty anon (kB)
smaps.py PID --by-map   private pages (Private_Clean + Private_Dirty, kB) per
                        mapping: the program, each library, [heap], [stack],
                        anonymous mappings (other threads' stacks, malloc
                        arenas, libraries' own mmaps), largest first.
smaps.py PID --groups PROG GROUP=LIB,LIB... ... REST
                        the same summed into groups: PROG's own (the program's
                        file, [heap], [stack], anonymous mappings), each
                        GROUP, and REST (every other library).
USS (unique set size, smem's definition) is Private_Clean + Private_Dirty.
"""
import collections
import sys


def rollup(pid):
    v = {}
    with open("/proc/%s/smaps_rollup" % pid) as f:
        for line in f:
            p = line.split()
            if len(p) >= 2 and p[0].endswith(":") and p[1].isdigit():
                v[p[0][:-1]] = int(p[1])
    return v


def by_map(pid):
    agg = collections.defaultdict(lambda: [0, 0, 0])  # clean, dirty, pss
    name = None
    with open("/proc/%s/smaps" % pid) as f:
        for line in f:
            p = line.split()
            if not p:
                continue
            if not p[0].endswith(":"):  # a mapping's header line
                name = p[5] if len(p) > 5 else "[anon]"
                if name.startswith("/"):
                    name = name.rsplit("/", 1)[-1]
                continue
            if p[0] == "Private_Clean:":
                agg[name][0] += int(p[1])
            elif p[0] == "Private_Dirty:":
                agg[name][1] += int(p[1])
            elif p[0] == "Pss:":
                agg[name][2] += int(p[1])
    return agg


def main():
    pid = sys.argv[1]
    if "--by-map" in sys.argv[2:]:
        agg = by_map(pid)
        print("%-34s %8s %8s %8s %8s" % ("mapping", "private", "clean", "dirty", "pss"))
        for k, (c, d, s) in sorted(agg.items(), key=lambda kv: -(kv[1][0] + kv[1][1])):
            if c + d or s:
                print("%-34s %8d %8d %8d %8d" % (k, c + d, c, d, s))
        return
    if sys.argv[2:3] == ["--groups"]:
        prog, groups, rest = sys.argv[3], sys.argv[4:-1], sys.argv[-1]
        where = {}
        order = ["%s's own: program, heap, stacks, anonymous" % prog]
        for g in groups:
            name, libs = g.split("=", 1)
            order.append(name)
            for lib in libs.split(","):
                where[lib] = name
        order.append(rest)
        tot = collections.OrderedDict((k, [0, 0]) for k in order)
        for k, (c, d, _) in by_map(pid).items():
            g = order[0] if k == prog or k.startswith("[") else where.get(k, rest)
            tot[g][0] += c
            tot[g][1] += d
        print("%-52s %8s %8s %8s" % ("kB", "private", "clean", "dirty"))
        for k, (c, d) in tot.items():
            print("%-52s %8d %8d %8d" % (k, c + d, c, d))
        if len(order) > 2:  # the total without the first GROUP
            c = sum(v[0] for k, v in tot.items() if k != order[1])
            d = sum(v[1] for k, v in tot.items() if k != order[1])
            print("%-52s %8d %8d %8d" % ("all but " + order[1].split(" (")[0], c + d, c, d))
        return
    r = rollup(pid)
    print(r["Rss"], r["Pss"], r["Private_Clean"] + r["Private_Dirty"], r["Private_Dirty"],
          r.get("Anonymous", 0))


main()
