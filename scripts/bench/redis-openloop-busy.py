#!/usr/bin/env python3
"""SECOND reference only, labelled "busy" (issue 31): the busy-waiting client of issue 23.

The reference is redis-openloop.py (the plain shape). This one spins to each
send; on a 2-core host the spin takes the core the server needs, so it reads
slower than a plain client and makes a handicapped yardstick. It is kept to
compare with the earlier rounds' numbers.

GET at a fixed rate on one connection.

It busy-waits to each intended send time and blocks in recv for the reply, so
its own wake-ups add almost nothing; the response time runs from the intended
send time to the end of the reply (free of coordinated omission, as ours).

usage: redis-openloop-busy.py HOST PORT RATE SECONDS   (prints p50_us p99_us n)
"""
import socket
import sys
import time


def main():
    host, port, rate, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    s = socket.create_connection((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$3\r\nval\r\n")
    s.recv(64)
    req, want = b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n", b"$3\r\nval\r\n"
    gap, lat = 1.0 / rate, []
    start = time.perf_counter()
    n = int(rate * secs)
    for i in range(n):
        due = start + i * gap
        while time.perf_counter() < due:
            pass
        s.sendall(req)
        got = b""
        while len(got) < len(want):
            got += s.recv(64)
        lat.append(time.perf_counter() - due)
    lat.sort()
    print("p50_us %.1f p99_us %.1f n %d" % (lat[len(lat) // 2] * 1e6, lat[int(len(lat) * 0.99)] * 1e6, len(lat)))


if __name__ == "__main__":
    main()
