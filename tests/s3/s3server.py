"""A real S3-compatible server for the tests, started and stopped by them.

Implementations (HS_S3_SERVER selects one; unset or "both": SeaweedFS when
its binary is installed, else moto; `make test-s3` runs one leg per server):

* ``seaweedfs`` SeaweedFS's ``weed server -s3`` (the main target;
                scripts/install-seaweedfs.sh builds it once into
                ~/.cache/hyperstream/bin).
* ``moto``      moto's server mode (PyPI ``moto[server]``, in
                scripts/requirements-test.txt): quick to start, in Python.

Use from Python::

    with S3Server() as s3:          # starts, creates the bucket, stops at exit
        s3.env                      # AWS_* variables pointing our client at it
        s3.uri("t")                 # "s3://hs-test/t"

or around a command (what ctest does for tests/c/test_s3.c)::

    python tests/s3/s3server.py run [--fault-rate 0.1] -- ./build/test_s3

which exports the same variables plus HS_TEST_S3_ENDPOINT and HS_TEST_S3_BUCKET.
``matrix`` instead of ``run`` starts the server only when HS_TEST_STORAGE=s3 (the
test matrix switch: the table, index and vector tests then keep their tables on
it), else runs the command as is.
"""
import argparse
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
BUCKET = "hs-test"
ACCESS_KEY = "hsaccesskey"
SECRET_KEY = "hssecretkey"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_pair():
    """A free port p below 55536 whose p + 10000 is free too (SeaweedFS puts each
    service's gRPC port 10000 above its HTTP port)."""
    for _ in range(200):
        p = free_port()
        if p >= 55536:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p + 10000))
                return p
            except OSError:
                continue
    raise RuntimeError("no free port pair for SeaweedFS")


def _wait_http(url, proc, timeout, log):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"S3 server exited with {proc.returncode}: {_tail(log)}")
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except urllib.error.HTTPError:
            return   # it answers (403 or 404 are fine)
        except Exception:
            time.sleep(0.1)
    raise RuntimeError(f"S3 server at {url} did not start in {timeout}s: {_tail(log)}")


def _tail(path):
    try:
        return pathlib.Path(path).read_text(errors="replace")[-2000:]
    except OSError:
        return ""


def weed_binary():
    """The cached weed binary, building it when HS_S3_BUILD_WEED=1 (it takes minutes)."""
    bindir = pathlib.Path(os.environ.get("HS_TOOLS_BIN", pathlib.Path.home() / ".cache/hyperstream/bin"))
    weed = bindir / "weed"
    if weed.exists():
        return str(weed)
    if os.environ.get("HS_S3_BUILD_WEED") == "1":
        out = subprocess.run([str(REPO / "scripts/install-seaweedfs.sh")], check=True,
                             capture_output=True, text=True)
        return out.stdout.strip().splitlines()[-1]
    return None


def default_kind():
    """HS_S3_SERVER, or (unset or "both") SeaweedFS when installed, else moto."""
    kind = os.environ.get("HS_S3_SERVER", "")
    if kind in ("", "both"):
        return "seaweedfs" if weed_binary() else "moto"
    return kind


class S3Server:
    def __init__(self, kind=None, bucket=BUCKET):
        self.kind = kind or default_kind()
        self.bucket = bucket
        self.proc = None
        self.tmp = None
        self.port = None
        self.access_key, self.secret_key = ACCESS_KEY, SECRET_KEY
        self.verifies_signatures = False

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self):
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": "us-east-1",
            "HS_TEST_S3_ENDPOINT": self.endpoint,
            "HS_TEST_S3_BUCKET": self.bucket,
            "HS_TEST_S3_AUTH": "1" if self.verifies_signatures else "0",
        }

    def uri(self, key=""):
        return f"s3://{self.bucket}/{key}"

    def start(self):
        self.tmp = tempfile.mkdtemp(prefix="hs-s3-")
        self.port = free_port_pair()
        log = os.path.join(self.tmp, "server.log")
        logf = open(log, "wb")
        if self.kind == "moto":
            # moto checks SigV4 signatures once its first 4 (unauthenticated)
            # actions (the readiness probe, then an IAM user, its key and its
            # policy) are done
            env = dict(os.environ, MOTO_ALLOW_NONEXISTENT_REGION="true",
                       INITIAL_NO_AUTH_ACTION_COUNT="4")
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=logf, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        elif self.kind == "seaweedfs":
            weed = weed_binary()
            if not weed:
                raise RuntimeError("SeaweedFS is not installed: run scripts/install-seaweedfs.sh "
                                   "(or set HS_S3_BUILD_WEED=1)")
            master, volume, filer = free_port_pair(), free_port_pair(), free_port_pair()
            # an identity, so that SeaweedFS checks SigV4 signatures
            conf = os.path.join(self.tmp, "s3.json")
            with open(conf, "w") as f:
                json.dump({"identities": [{
                    "name": "hs",
                    "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, f)
            self.verifies_signatures = True
            self.proc = subprocess.Popen(
                [weed, "server", "-dir", self.tmp, "-ip", "127.0.0.1", "-ip.bind", "127.0.0.1",
                 f"-master.port={master}", f"-volume.port={volume}", f"-filer.port={filer}",
                 "-s3", f"-s3.port={self.port}", f"-s3.config={conf}",
                 "-master.volumeSizeLimitMB=64",
                 "-volume.max=0"],
                stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
        else:
            raise ValueError(f"unknown S3 server kind {self.kind!r} (moto, seaweedfs)")
        logf.close()
        _wait_http(self.endpoint + "/", self.proc, 60, log)
        if self.kind == "moto":
            self._moto_user()
        self.make_bucket(self.bucket)
        return self

    def _moto_user(self):
        import boto3   # installed with moto
        iam = boto3.client("iam", endpoint_url=self.endpoint, region_name="us-east-1",
                           aws_access_key_id="setup", aws_secret_access_key="setup")
        iam.create_user(UserName="hs")
        key = iam.create_access_key(UserName="hs")["AccessKey"]
        iam.put_user_policy(UserName="hs", PolicyName="all", PolicyDocument=json.dumps(
            {"Version": "2012-10-17",
             "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        self.access_key, self.secret_key = key["AccessKeyId"], key["SecretAccessKey"]
        self.verifies_signatures = True

    def make_bucket(self, name):
        if self.verifies_signatures:
            import boto3
            c = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                             aws_access_key_id=self.access_key,
                             aws_secret_access_key=self.secret_key)
            deadline = time.time() + 60
            while True:   # SeaweedFS answers before its filer is ready
                try:
                    c.create_bucket(Bucket=name)
                    return
                except (c.exceptions.BucketAlreadyOwnedByYou, c.exceptions.BucketAlreadyExists):
                    return
                except Exception:
                    if time.time() > deadline:
                        raise
                    time.sleep(0.5)
        deadline = time.time() + 30
        while True:
            req = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT", data=b"")
            try:
                urllib.request.urlopen(req, timeout=10).read()
                return
            except urllib.error.HTTPError as e:
                if e.code == 409:   # BucketAlreadyOwnedByYou
                    return
                if time.time() > deadline:
                    raise
            except OSError:
                if time.time() > deadline:
                    raise
            time.sleep(0.2)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["run", "matrix"],
                    help="run: start the server around the command; matrix: only when "
                         "HS_TEST_STORAGE=s3 (the test matrix switch), else run it as is")
    ap.add_argument("--kind", default=None)
    ap.add_argument("--fault-rate", type=float, default=0.0,
                    help="put tests/s3/faultproxy.py in front, failing this share of requests")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if a.mode == "matrix" and os.environ.get("HS_TEST_STORAGE", "local") != "s3":
        return subprocess.call(cmd)
    with S3Server(a.kind) as s3:
        env = dict(os.environ, **s3.env)
        proxy = None
        if a.fault_rate > 0:
            sys.path.insert(0, str(HERE))
            from faultproxy import FaultProxy
            proxy = FaultProxy(s3.port, rate=a.fault_rate).start()
            env["AWS_ENDPOINT_URL"] = env["HS_TEST_S3_ENDPOINT"] = proxy.endpoint
        try:
            return subprocess.call(cmd, env=env)
        finally:
            if proxy:
                proxy.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
