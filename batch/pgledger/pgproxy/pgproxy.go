// Package pgproxy is a TCP proxy between PostgreSQL clients and a server,
// for tests: it listens on 127.0.0.1, forwards each connection to the
// server, and on command drops, stalls or resets connections, cuts one
// between a COMMIT and its answer (or before the COMMIT reaches the
// server), and adds a fixed delay to every round trip. It counts
// connections, round trips and COMMITs.
//
// It reads the frontend/backend protocol's message framing (a type byte
// and a length) in both directions, to find a COMMIT sent by the simple
// protocol (Query) or the extended one (Parse), and the server's
// ReadyForQuery that ends its answer.
package pgproxy

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// CommitCut says where the proxy cuts a connection that sends a COMMIT.
type CommitCut int

// The places a COMMIT's connection can be cut.
const (
	// BeforeCommit closes the connection instead of forwarding the
	// COMMIT: the server rolls the transaction back.
	BeforeCommit CommitCut = iota + 1
	// AfterCommit forwards the COMMIT, drops the server's answer once it
	// is complete (the transaction is committed), and closes the
	// connection: the client never learns that it committed.
	AfterCommit
)

func (w CommitCut) String() string {
	switch w {
	case BeforeCommit:
		return "before the commit"
	case AfterCommit:
		return "after the commit"
	}
	return "no cut"
}

// Stats counts what went through the proxy.
type Stats struct {
	// Conns is the number of connections accepted.
	Conns int64
	// RoundTrips counts, over all connections, the client's turns: each
	// time the client sends after the server has answered (or first).
	RoundTrips int64
	// Commits is the number of COMMITs the clients sent, and of
	// statements sent outside a transaction (each commits on its own).
	Commits int64
	// Cut is the number of connections cut at a COMMIT.
	Cut int64
}

// A Proxy forwards connections to one PostgreSQL server.
type Proxy struct {
	target string
	ln     net.Listener

	conns, roundTrips, commits, cut atomic.Int64
	delay                           atomic.Int64 // time.Duration added to each round trip

	mu      sync.Mutex
	open    map[*pipe]struct{}
	stalled chan struct{} // closed when not stalled; nil when never stalled
	refuse  bool
	cutIn   int // the cutIn-th COMMIT from now is cut (0: none)
	cutAt   CommitCut
	closed  bool
	wg      sync.WaitGroup
}

// New starts a proxy to target (host:port) on a free port of 127.0.0.1.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("pgproxy: %w", err)
	}
	p := &Proxy{target: target, ln: ln, open: map[*pipe]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address, 127.0.0.1:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is rawURL (a postgres:// URL of the server) with its host and port
// replaced by the proxy's.
func (p *Proxy) URL(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("pgproxy: %w", err)
	}
	u.Host = p.Addr()
	return u.String(), nil
}

// Stats returns the counts so far.
func (p *Proxy) Stats() Stats {
	return Stats{Conns: p.conns.Load(), RoundTrips: p.roundTrips.Load(),
		Commits: p.commits.Load(), Cut: p.cut.Load()}
}

// SetDelay adds d to every round trip (the server's answers are held d
// before they are forwarded, each from when it arrived), from now on.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Stall stops forwarding in both directions, on open connections and new
// ones, until Resume: a network that loses every packet.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled == nil || isClosed(p.stalled) {
		p.stalled = make(chan struct{})
	}
}

// Resume ends a Stall.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled != nil && !isClosed(p.stalled) {
		close(p.stalled)
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Refuse makes the proxy close new connections at once (on) or forward
// them again (off): a server that cannot be reached.
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = on
}

// Drop closes every open connection, both ends, as an orderly close.
func (p *Proxy) Drop() { p.each(func(c *pipe) { c.close(false) }) }

// Reset resets every open connection: the client's end gets a TCP RST.
func (p *Proxy) Reset() { p.each(func(c *pipe) { c.close(true) }) }

func (p *Proxy) each(f func(*pipe)) {
	p.mu.Lock()
	open := make([]*pipe, 0, len(p.open))
	for c := range p.open {
		open = append(open, c)
	}
	p.mu.Unlock()
	for _, c := range open {
		f(c)
	}
}

// CutCommit arms a cut: the n-th commit (a COMMIT, or a statement sent
// outside a transaction) sent from now on (n ≥ 1), on any
// connection, has its connection cut at where. One cut is armed at a
// time; n = 0 disarms it.
func (p *Proxy) CutCommit(n int, where CommitCut) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutIn, p.cutAt = n, where
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.Resume()
	p.Drop()
	p.wg.Wait()
	if err != nil {
		return fmt.Errorf("pgproxy: %w", err)
	}
	return nil
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.conns.Add(1)
		p.mu.Lock()
		refuse, closed := p.refuse, p.closed
		p.mu.Unlock()
		if refuse || closed {
			_ = client.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// A pipe is one client's connection and the proxy's to the server.
type pipe struct {
	p              *Proxy
	client, server net.Conn
	once           sync.Once
	done           chan struct{} // closed by close
	answered       atomic.Bool   // the server sent something since the client last did
	cutting        atomic.Bool   // a COMMIT was forwarded and its answer is to be dropped
	inTx           atomic.Bool   // the server's last ReadyForQuery said: in a transaction
	executed       bool          // an Execute since the client's last Sync
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	c := &pipe{p: p, client: client, server: server, done: make(chan struct{})}
	c.answered.Store(true)
	p.mu.Lock()
	p.open[c] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { c.fromServer(); close(done) }()
	c.fromClient()
	<-done
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
}

// close ends both connections; reset sends the client a TCP RST.
func (c *pipe) close(reset bool) {
	c.once.Do(func() {
		close(c.done)
		if tcp, ok := c.client.(*net.TCPConn); ok && reset {
			_ = tcp.SetLinger(0)
		}
		_ = c.client.Close()
		_ = c.server.Close()
	})
}

// wait blocks while the proxy is stalled, or until the pipe is closed.
func (c *pipe) wait() {
	c.p.mu.Lock()
	stalled := c.p.stalled
	c.p.mu.Unlock()
	if stalled != nil {
		select {
		case <-stalled:
		case <-c.done:
		}
	}
}

// maxMessage bounds a message the proxy reads whole (a COMMIT's Query or
// Parse); longer messages are streamed through.
const maxMessage = 1 << 16

// fromClient forwards the client's messages, watching for a COMMIT.
func (c *pipe) fromClient() {
	defer c.close(false)
	r := bufio.NewReaderSize(c.client, 1<<16)
	if !c.startup(r) {
		return
	}
	for {
		typ, body, long, err := readMessage(r)
		if err != nil {
			return
		}
		c.wait()
		if c.answered.Swap(false) {
			c.p.roundTrips.Add(1)
		}
		if c.commits(typ, body) {
			c.p.commits.Add(1)
			switch c.p.takeCut() {
			case BeforeCommit:
				c.p.cut.Add(1)
				return
			case AfterCommit:
				c.p.cut.Add(1)
				c.cutting.Store(true)
			}
		}
		if err := writeMessage(c.server, typ, body, long, r); err != nil {
			return
		}
	}
}

func (p *Proxy) takeCut() CommitCut {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutIn == 0 {
		return 0
	}
	p.cutIn--
	if p.cutIn > 0 {
		return 0
	}
	return p.cutAt
}

// A chunk is what the server sent, held until it is due.
type chunk struct {
	b   []byte
	due time.Time
}

// fromServer forwards the server's bytes, each chunk delayed by the
// proxy's delay from when it arrived; while a COMMIT is being cut it
// drops the server's messages until its ReadyForQuery and then closes
// the connection.
func (c *pipe) fromServer() {
	defer c.close(false)
	out := make(chan chunk, 64)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for ch := range out {
			if d := time.Until(ch.due); d > 0 {
				time.Sleep(d)
			}
			c.wait()
			if _, err := c.client.Write(ch.b); err != nil {
				c.close(false)
				for range out {
				}
				return
			}
		}
	}()
	defer func() { close(out); <-wrote }()
	f := &framer{}
	buf := make([]byte, 1<<16)
	for {
		n, err := c.server.Read(buf)
		if n > 0 {
			c.answered.Store(true)
			b := append([]byte(nil), buf[:n]...)
			if c.cutting.Load() {
				// Everything from here on answers the COMMIT or later:
				// drop it, and cut once the COMMIT's answer is complete.
				if f.readyIn(b) {
					c.close(true)
					return
				}
				continue
			}
			f.feed(b)
			if f.status != 0 {
				c.inTx.Store(f.status != 'I')
			}
			out <- chunk{b: b, due: time.Now().Add(time.Duration(c.p.delay.Load()))}
		}
		if err != nil {
			return
		}
	}
}
