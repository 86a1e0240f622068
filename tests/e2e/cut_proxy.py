#!/usr/bin/env python3
"""A TCP proxy on 127.0.0.1 that can partition its clients from the server: the e2e puts one
operator replica behind it to cut that replica off from the API server.

Usage: cut_proxy.py LISTEN_PORT TARGET_PORT
SIGUSR1 cuts: every connection (open or new) becomes a black hole (bytes are read and dropped,
nothing is answered), as a network partition looks to a client. SIGUSR2 heals: black-holed
connections are closed, new ones are forwarded again. Every connection and every chunk forwarded
from a client is logged with a timestamp, so the test can tell whether a client sent anything
after a given moment. I/O: one listening socket on 127.0.0.1, connections to 127.0.0.1 only.
"""

import asyncio
import signal
import sys
import time

state = {"cut": False, "holes": set()}


def log(message):
    print(f"{time.time():.3f} {message}", flush=True)


async def pipe(reader, writer, name, from_client):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            if state["cut"]:
                continue  # a black hole: read and drop
            if from_client:
                log(f"forwarded {len(data)} bytes from {name}")
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def handle(client_reader, client_writer, target_port):
    name = "%s:%s" % client_writer.get_extra_info("peername")[:2]
    if state["cut"]:
        log(f"black-holed new connection from {name}")
        state["holes"].add(client_writer)
        try:
            while await client_reader.read(65536):
                pass
        finally:
            client_writer.close()
        return
    log(f"connection from {name}")
    server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
    state["holes"].add(client_writer)
    await asyncio.gather(
        pipe(client_reader, server_writer, name, True),
        pipe(server_reader, client_writer, name, False),
    )


def cut():
    state["cut"] = True
    log("cut")


def heal():
    state["cut"] = False
    for writer in list(state["holes"]):
        writer.close()
    state["holes"].clear()
    log("healed")


async def main():
    listen_port, target_port = int(sys.argv[1]), int(sys.argv[2])
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, cut)
    loop.add_signal_handler(signal.SIGUSR2, heal)
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, target_port), "127.0.0.1", listen_port
    )
    log(f"listening on 127.0.0.1:{listen_port} -> 127.0.0.1:{target_port}")
    async with server:
        await server.serve_forever()


asyncio.run(main())
