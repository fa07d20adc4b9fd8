"""A bare websockets echo server: the transport's floor for bench/load.py.

Run: python bench/echo_server.py PORT  (same websockets settings as solrace: no compression).
"""

from __future__ import annotations

import argparse
import asyncio

from websockets.asyncio.server import ServerConnection, serve


async def echo(ws: ServerConnection) -> None:
    async for frame in ws:
        await ws.send(frame)


async def main(port: int) -> None:
    async with serve(echo, "127.0.0.1", port, compression=None, max_size=16 * 1024):
        print(f"echo listening on {port}", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("port", type=int, help="the loopback port to listen on")
    asyncio.run(main(parser.parse_args().port))
