#!/usr/bin/python3
"""A TCP proxy for the network fault tests: listens on LISTEN, forwards to
TARGET, and passes the server's bytes on at a rate read from MODE-FILE at
every chunk (so a test switches it on the fly):

  fast          as fast as they come
  slow N        the first N bytes of each connection fast, then one byte a
                second (a TLS handshake completes with N ~ 8192, the HTTP
                answer then trickles); "slow 0": the handshake trickles too

Client-to-server bytes always pass at full speed. Every accepted connection
is logged to LOG as "<time> open <n>" / "<time> close <n> <bytes>".
Python 3 standard library only.

  slowproxy.py LISTEN TARGET MODE-FILE LOG
"""
import socket
import sys
import threading
import time


def mode(path):
    try:
        with open(path) as f:
            w = f.read().split()
    except OSError:
        return None
    if len(w) == 2 and w[0] == "slow":
        return int(w[1])
    return None


def log(path, line):
    with open(path, "a") as f:
        f.write("%.3f %s\n" % (time.time(), line))


def pipe_up(src, dst):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    for s in (dst,):
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def pipe_down(src, dst, mode_file, logf, n):
    sent = 0
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            i = 0
            while i < len(b):
                limit = mode(mode_file)
                if limit is None or sent < limit:
                    k = len(b) - i if limit is None else min(len(b) - i, limit - sent)
                    dst.sendall(b[i:i + k])
                    i += k
                    sent += k
                else:
                    dst.sendall(b[i:i + 1])
                    i += 1
                    sent += 1
                    time.sleep(1.0)
    except OSError:
        pass
    log(logf, "close %d %d" % (n, sent))
    for s in (src, dst):
        try:
            s.close()
        except OSError:
            pass


def main():
    listen, target, mode_file, logf = sys.argv[1:5]
    lh, lp = listen.rsplit(":", 1)
    th, tp = target.rsplit(":", 1)
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((lh, int(lp)))
    srv.listen(64)
    n = 0
    while True:
        c, _ = srv.accept()
        n += 1
        log(logf, "open %d" % n)
        try:
            s = socket.create_connection((th, int(tp)), timeout=5)
            s.settimeout(None)
        except OSError:
            log(logf, "close %d 0" % n)
            c.close()
            continue
        threading.Thread(target=pipe_up, args=(c, s), daemon=True).start()
        threading.Thread(target=pipe_down, args=(s, c, mode_file, logf, n), daemon=True).start()


if __name__ == "__main__":
    main()
