#!/usr/bin/env python3
"""Times shell commands in alternation, so that a noisy machine slows all of them alike.

    python3 kanata-pp/benches/alternate.py ROUNDS 'command 1' 'command 2' ... 'baseline'

Runs every command once as a warm-up, then ROUNDS rounds of each command in turn, and prints
the median and the fastest time of each with their ratios to the last command (the
baseline), and the median CPU time (user and system, of the command and its children) with
its ratio. hyperfine runs one command's runs back to back; when the machine's load changes
during a benchmark, that favours whichever command ran in the quiet part. The CPU time moves
less than the wall time when the machine is busy, but counts a spinning thread's wait.

On this project's machine the kernel trims the page cache between rounds: the first command
of a round that reads a large input pays for bringing it back (0.294x against 0.263x of
`zstd -3 -T1` for the same two binaries in one order, 0.262x against 0.273x in the other).
Put `'cat INPUT > /dev/null'` first, ignore its line, and run both orders.
"""
import os
import statistics
import subprocess
import sys
import time

rounds = int(sys.argv[1])
commands = sys.argv[2:]
times = [[] for _ in commands]
cpu_times = [[] for _ in commands]
for round_ in range(rounds + 1):
    for i, command in enumerate(commands):
        start = time.perf_counter()
        child = subprocess.Popen(command, shell=True)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"failed: {command}")
        if round_ > 0:
            times[i].append(elapsed)
            cpu_times[i].append(usage.ru_utime + usage.ru_stime)
base_median = statistics.median(times[-1])
base_min = min(times[-1])
base_cpu = max(statistics.median(cpu_times[-1]), 1e-9)
for command, t, cpu in zip(commands, times, cpu_times):
    median = statistics.median(t)
    cpu_median = statistics.median(cpu)
    print(
        f"{median * 1000:7.1f} ms median {min(t) * 1000:7.1f} min"
        f"  x{median / base_median:.3f} (min x{min(t) / base_min:.3f})"
        f"  cpu {cpu_median * 1000:7.1f} ms x{cpu_median / base_cpu:.3f}  {command}"
    )
