// Package memnet is an in-memory network for tests that run in a
// testing/synctest bubble. The bubble's clock moves only when every
// goroutine in it is durably blocked, and a goroutine blocked on a real
// socket is not: a server on 127.0.0.1, or an idle pooled connection whose
// read loop waits on its socket, stops the clock. A memnet connection is a
// net.Pipe, whose reads and writes block on channels of the bubble, so a
// server and its clients can both live inside it.
//
// An http.Server serves a Listener as it would a TCP one; an http.Transport
// reaches it through Listener.Transport. Connections are synchronous, with
// no buffer between the two ends: a write returns when the other end has
// read it.
package memnet

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
)

// ports numbers the Listeners, so that each has an address of its own
// (among the last 50,000: a Transport dials only its own Listener anyway).
var ports atomic.Uint32

// A Listener is a net.Listener whose connections come from its Dial.
type Listener struct {
	addr   *net.TCPAddr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

// Listen returns a Listener at a made-up address on 127.0.0.1, so that an
// http:// URL of it is a loopback URL. Inside a bubble, call it inside the
// bubble: its channels belong to the bubble that made them.
func Listen() *Listener {
	return &Listener{
		addr:   &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 10000 + int(ports.Add(1)%50000)},
		conns:  make(chan net.Conn),
		closed: make(chan struct{}),
	}
}

// Accept waits for the next connection made by Dial.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops Accept and refuses later dials; connections already made
// stay open.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr is the Listener's made-up address.
func (l *Listener) Addr() net.Addr { return l.addr }

// Dial connects to l when addr is l's address, once Accept takes the
// connection, and returns the client's end. Any other address, and a closed
// Listener, is refused as a TCP dial would be.
func (l *Listener) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	refused := &net.OpError{Op: "dial", Net: network, Addr: l.addr, Err: syscall.ECONNREFUSED}
	if addr != l.addr.String() {
		return nil, refused
	}
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
	case <-ctx.Done():
		refused.Err = ctx.Err()
	}
	_ = server.Close()
	_ = client.Close()
	return nil, refused
}

// Transport returns an http.Transport that makes every connection with
// l.Dial.
func (l *Listener) Transport() *http.Transport {
	return &http.Transport{DialContext: l.Dial}
}
