#!/usr/bin/env python3
"""The plain open-loop reference client (issue 31): redis GETs at a fixed rate on one connection.

The shape of ../shared/reference/plain-openloop.py, what a careful user writes
in ten minutes: it sleeps in 100 us steps until each intended send time (it
never spins, so on a 2-core host it leaves the server its core), sends,
blocks in recv for the reply, and times from its own send to the end of the
reply, so its own late wake-ups are not charged to the server (the rule
netperfkit states for its client's lateness). The busy-waiting client of
issue 23 is redis-openloop-busy.py, a labelled second reference only.

usage: redis-openloop.py HOST PORT RATE SECONDS   -> "p50_us X p99_us Y n N"
"""
import socket
import sys
import time

host, port, rate, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
s = socket.create_connection((host, port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
s.recv(64)
req, want = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", len(b"$1\r\nv\r\n")
lat, due = [], time.perf_counter()
for _ in range(int(rate * secs)):
    due += 1.0 / rate
    while time.perf_counter() < due:
        time.sleep(0.0001)
    t = time.perf_counter()
    s.sendall(req)
    got = 0
    while got < want:
        got += len(s.recv(64))
    lat.append(time.perf_counter() - t)
lat.sort()
print("p50_us %.1f p99_us %.1f n %d" % (lat[len(lat) // 2] * 1e6, lat[int(len(lat) * 0.99)] * 1e6, len(lat)))
