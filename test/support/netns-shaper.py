# A link with latency and loss in user space, for kernels without `sch_netem` (the across-hosts suites,
# test/support/netns-hosts.ts). Opens two taps in the current network namespace and carries every
# Ethernet frame from one to the other, each way, after `delay` ms +- a uniform `jitter` ms, dropping
# `loss` percent of them at random (each direction on its own, as netem on both ends of a link).
#   python3 netns-shaper.py <tap-a> <tap-b> <delay-ms> <jitter-ms> <loss-percent>
# Prints READY once both taps exist; exits on SIGTERM or when its standard input closes.
import fcntl
import heapq
import os
import random
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000


def open_tap(name):
    fd = os.open('/dev/net/tun', os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack('16sH', name.encode(), IFF_TAP | IFF_NO_PI))
    os.set_blocking(fd, False)
    return fd


def main():
    a_name, b_name = sys.argv[1], sys.argv[2]
    delay = float(sys.argv[3]) / 1000
    jitter = float(sys.argv[4]) / 1000
    loss = float(sys.argv[5]) / 100
    a, b = open_tap(a_name), open_tap(b_name)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print('READY', flush=True)
    peer = {a: b, b: a}
    stdin = sys.stdin.fileno()
    queue = []
    sequence = 0
    while True:
        timeout = max(0.0, queue[0][0] - time.monotonic()) if queue else None
        ready, _, _ = select.select([a, b, stdin], [], [], timeout)
        for fd in ready:
            if fd == stdin:
                if os.read(stdin, 4096) == b'':
                    return
                continue
            while True:
                try:
                    frame = os.read(fd, 65536)
                except BlockingIOError:
                    break
                if loss > 0 and random.random() < loss:
                    continue
                at = time.monotonic() + max(0.0, delay + random.uniform(-jitter, jitter))
                sequence += 1
                heapq.heappush(queue, (at, sequence, peer[fd], frame))
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            _, _, fd, frame = heapq.heappop(queue)
            try:
                os.write(fd, frame)
            except OSError:
                pass


main()
