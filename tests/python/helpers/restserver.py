"""`hyperstream serve --rest` for the interop tests (Spark, DuckDB): our Iceberg
REST catalog server on a free loopback port with a bearer token, backed by a
SQLite catalog in a temporary directory; stop() sends SIGTERM and checks a
clean exit."""
import os
import pathlib
import signal
import subprocess
import time


class RestServer:
    def __init__(self, cli: pathlib.Path, tmp: pathlib.Path, warehouse: str, token: str,
                 env=None, extra=()):
        tmp.mkdir(parents=True, exist_ok=True)
        self.db = tmp / "rest.db"
        port_file = tmp / "port"
        self.log_path = tmp / "server.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [str(cli), "serve", "--rest", "--catalog", str(self.db), "--warehouse", warehouse,
             "--port", "0", "--port-file", str(port_file), *extra],
            env=dict(os.environ, **(env or {}), HYPERSTREAM_REST_TOKEN=token),
            stderr=self.log)
        for _ in range(400):
            if port_file.exists() and port_file.read_text().strip():
                break
            if self.proc.poll() is not None:
                self.log.close()
                raise RuntimeError(f"server exited: {self.log_path.read_text()}")
            time.sleep(0.05)
        else:
            self.stop()
            raise RuntimeError(f"server did not listen: {self.log_path.read_text()}")
        self.url = f"http://127.0.0.1:{port_file.read_text().strip()}"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            assert self.proc.wait(timeout=30) == 0, self.log_path.read_text()[-2000:]
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.log.close()
