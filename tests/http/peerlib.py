# SPDX-License-Identifier: MIT
"""A real peer of the tests run by node (an OAuth authorization server, an OpenID Connect
provider, Stripe's API stand-in): one process with its own temp dir (config.json, stdout, its
log), started with a config file, ready when it prints its first stdout line (JSON: its port
and what else it tells), stopped by its own PID. Waits are bounded."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from harness import REPO_ROOT


class NodePeer:
    """Subclasses set 'what' (for messages), 'script', 'log_name' and 'prefix', and call
    spawn(config) from their start()."""

    what = "peer"
    script = None
    log_name = "peer.log"
    prefix = "workforce-peer-"

    def __init__(self):
        self.proc = None
        self.tmpdir = None
        self.info = None

    def spawn(self, config, timeout=20.0):
        """Write 'config', spawn node, wait (at most 'timeout' s) for the ready line, kept
        parsed in self.info; returns self."""
        self.tmpdir = tempfile.mkdtemp(prefix=self.prefix)
        cfg_path = os.path.join(self.tmpdir, "config.json")
        with open(cfg_path, "w") as f:
            json.dump(config, f)
        out_path = os.path.join(self.tmpdir, "stdout")
        with open(out_path, "wb") as out, open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(["node", self.script, "--config", cfg_path],
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=log,
                                         cwd=REPO_ROOT)
        deadline = time.time() + timeout
        while True:
            with open(out_path, "rb") as f:
                data = f.read()
            if b"\n" in data:
                line = data.split(b"\n", 1)[0]
                try:
                    self.info = json.loads(line)
                except ValueError:
                    self.stop()
                    raise RuntimeError("%s printed a bad ready line %r:\n%s"
                                       % (self.what, line[:200], self.log_tail()))
                return self
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s during start:\n%s"
                                   % (self.what, self.proc.returncode, self.log_tail()))
            if time.time() > deadline:
                self.stop()
                raise RuntimeError("%s not ready within %.0fs:\n%s"
                                   % (self.what, timeout, self.log_tail()))
            time.sleep(0.05)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=5.0):
        """SIGTERM by PID, SIGKILL after 'timeout' s; the temp dir goes (unless
        WORKFORCE_HTTP_KEEP). Returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        rc = self.proc.returncode
        if self.tmpdir and not os.environ.get("WORKFORCE_HTTP_KEEP"):
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    @property
    def log_path(self):
        return os.path.join(self.tmpdir, self.log_name) if self.tmpdir else None

    def log_tail(self, n=4000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except (OSError, TypeError):
            return "(no log)"
