"""An HTTP/2 test apiserver (python h2 over TLS, ALPN h2) for tests/unit/client/h2.c: counts the TCP
connections it accepts; /watch streams one event and stays open; /goaway-watch sends an event, a GOAWAY naming
this stream as the last one, ends the stream and closes the connection; /stall sends half a body and stalls;
/stats answers {"connections": N}. A third argument sets SETTINGS_MAX_CONCURRENT_STREAMS (1000)."""
import asyncio, json, ssl, sys
import h2.config, h2.connection, h2.events, h2.settings
from urllib.parse import urlparse, parse_qs

certdir, portfile = sys.argv[1], sys.argv[2]
max_streams = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
conns = 0


class Proto(asyncio.Protocol):
    def connection_made(self, transport):
        global conns
        conns += 1
        self.t = transport
        self.c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        self.c.initiate_connection()
        self.c.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: max_streams})
        self.flush()

    def flush(self):
        self.t.write(self.c.data_to_send())

    def data_received(self, data):
        try:
            events = self.c.receive_data(data)
        except Exception:
            self.t.close()
            return
        for ev in events:
            if isinstance(ev, h2.events.RequestReceived):
                self.request(ev.stream_id, dict((k.decode() if isinstance(k, bytes) else k,
                                                 v.decode() if isinstance(v, bytes) else v) for k, v in ev.headers))
            elif isinstance(ev, h2.events.DataReceived):
                self.c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        self.flush()

    def send(self, sid, status, body, end=True):
        self.c.send_headers(sid, [(":status", str(status)), ("content-type", "application/json")])
        if body:
            self.c.send_data(sid, body.encode(), end_stream=end)
        elif end:
            self.c.end_stream(sid)

    def request(self, sid, h):
        u = urlparse(h[":path"])
        q = parse_qs(u.query)
        if u.path == "/stats":
            self.send(sid, 200, json.dumps({"connections": conns}))
        elif u.path == "/watch":
            rv = int(q.get("resourceVersion", ["1"])[0])
            ev = {"type": "ADDED", "object": {"metadata": {"name": q.get("name", ["x"])[0],
                                                           "resourceVersion": str(rv + 1)}}}
            self.send(sid, 200, json.dumps(ev) + "\n", end=False)
        elif u.path == "/goaway-watch":
            rv = int(q.get("resourceVersion", ["1"])[0])
            ev = {"type": "ADDED", "object": {"metadata": {"name": "g", "resourceVersion": str(rv + 1)}}}
            self.send(sid, 200, json.dumps(ev) + "\n", end=False)
            self.flush()
            # a GOAWAY naming this stream the last one (raw: h2 sends nothing after its own), then the stream ends
            from hyperframe.frame import GoAwayFrame
            f = GoAwayFrame(0)
            f.last_stream_id = sid
            self.t.write(f.serialize())
            self.c.end_stream(sid)
            self.flush()
            asyncio.get_event_loop().call_later(0.2, self.t.close)
        elif u.path == "/stall":
            self.send(sid, 200, '{"kind":', end=False)
        else:
            self.send(sid, 404, json.dumps({"kind": "Status", "code": 404}))


async def main():
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(certdir + "/cert.pem", certdir + "/key.pem")
    ctx.set_alpn_protocols(["h2"])
    srv = await asyncio.get_event_loop().create_server(Proto, "127.0.0.1", 0, ssl=ctx)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.sockets[0].getsockname()[1]))
    import os
    os.rename(portfile + ".tmp", portfile)
    await srv.serve_forever()

asyncio.run(main())
