"""``tfjob-sandbox serve`` (``python -m tfjob_sandbox serve``): run a sandbox in the foreground.

It writes the kubeconfig, prints one ``sandbox ready <url>`` line once it serves, and stops on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from tfjob_sandbox.launch.assembly import SandboxOptions, SandboxRuntime


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tfjob-sandbox", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the sandbox API server until SIGTERM/SIGINT")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one (default)")
    serve.add_argument("--kubeconfig", type=Path, required=True, help="where to write the kubeconfig")
    serve.add_argument("--token", help="admin bearer token (default: random)")
    serve.add_argument("--state-dir", type=Path, help="keep objects here across restarts")
    serve.add_argument("--http", action="store_true", help="plain HTTP instead of HTTPS with a fresh CA")
    serve.add_argument("--rbac", type=Path, help="RBAC file (tokens, users, rules); see docs/sandbox.md")
    serve.add_argument("--allow-remote", action="store_true", help="allow binding a non-loopback address")
    serve.add_argument(
        "--loopback-tf-config",
        action="store_true",
        help="write 127.0.0.1 endpoints into TF_CONFIG so real TF processes can connect",
    )
    serve.add_argument("--history-limit", type=int, default=10_000, help="watch history per resource")
    serve.add_argument(
        "--bookmark-interval", type=float, default=60.0, help="seconds between watch bookmarks"
    )
    serve.add_argument(
        "--backoff-initial", type=float, default=1.0, help="first CrashLoopBackOff delay, seconds"
    )
    serve.add_argument("--backoff-cap", type=float, default=10.0, help="CrashLoopBackOff ceiling, seconds")
    serve.add_argument(
        "--pod-start-delay",
        type=float,
        default=0.0,
        help="seconds a scheduled pod waits in ContainerCreating before its containers start (image pull)",
    )
    serve.add_argument(
        "--workdir", type=Path, help="pod working directories and logs (default: temp or state dir)"
    )
    serve.add_argument(
        "--no-tfjob-crd",
        dest="tfjob_crd",
        action="store_false",
        help="do not install the TFJob CRD at start: TFJobs are served without schema validation",
    )
    serve.add_argument("--log-level", default="WARNING", help="Python logging level for stderr")
    return parser


async def _serve(options: SandboxOptions) -> int:
    runtime = SandboxRuntime(options)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    try:
        await runtime.start()
        print(f"sandbox ready {runtime.url} kubeconfig={runtime.kubeconfig_path}", flush=True)
        await stopping.wait()
    finally:
        await runtime.stop()
        runtime.cleanup()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    options = SandboxOptions(
        host=args.host,
        port=args.port,
        token=args.token,
        state_dir=args.state_dir,
        http=args.http,
        rbac_file=args.rbac,
        history_limit=args.history_limit,
        bookmark_interval=args.bookmark_interval,
        backoff_initial=args.backoff_initial,
        backoff_cap=args.backoff_cap,
        pod_start_delay=args.pod_start_delay,
        loopback_tf_config=args.loopback_tf_config,
        workdir=args.workdir,
        allow_remote=args.allow_remote,
        kubeconfig_path=args.kubeconfig,
        tfjob_crd=args.tfjob_crd,
    )
    try:
        options.check()
    except ValueError as error:
        print(f"tfjob-sandbox: {error}", file=sys.stderr)
        return 2
    return asyncio.run(_serve(options))


if __name__ == "__main__":
    sys.exit(main())
