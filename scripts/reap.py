"""Run a command as a child subreaper: every descendant that outlives its parent is re-parented here and reaped,
so the CPU of the whole process tree lands in this process's RUSAGE_CHILDREN (and in /usr/bin/time's figures)."""
import ctypes, os, subprocess, sys
PR_SET_CHILD_SUBREAPER = 36
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
p = subprocess.Popen(sys.argv[1:])
rc = None
while True:
    try:
        pid, status = os.wait()
    except ChildProcessError:
        break
    if pid == p.pid:
        rc = os.waitstatus_to_exitcode(status)
sys.exit(rc if rc is not None and rc >= 0 else 1)
