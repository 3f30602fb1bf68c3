package pgproxy

// The frontend/backend protocol's framing, as far as the proxy reads it:
// which client messages commit, and where the server's messages end.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"strings"
)

// commits says whether a client message commits: a COMMIT, or the end
// of a statement sent outside a transaction (a Query, or a Sync after an
// Execute), which commits on its own.
func (c *pipe) commits(typ byte, body []byte) bool {
	switch typ {
	case 'E':
		c.executed = true
	case 'S':
		executed := c.executed
		c.executed = false
		if executed && !c.inTx.Load() {
			return true
		}
	case 'Q':
		if !c.inTx.Load() && !isBegin(body) {
			return true
		}
	}
	return isCommit(typ, body)
}

// isBegin says whether a Query starts a transaction.
func isBegin(q []byte) bool {
	s := strings.ToUpper(strings.TrimSpace(string(q)))
	return strings.HasPrefix(s, "BEGIN") || strings.HasPrefix(s, "START")
}

// isCommit says whether a client message starts a COMMIT (or END).
func isCommit(typ byte, body []byte) bool {
	var q []byte
	switch typ {
	case 'Q': // Query: the string
		q = body
	case 'P': // Parse: the statement's name, then the string
		i := indexZero(body)
		if i < 0 {
			return false
		}
		q = body[i+1:]
	default:
		return false
	}
	if i := indexZero(q); i >= 0 {
		q = q[:i]
	}
	s := strings.ToUpper(strings.TrimRight(strings.TrimSpace(string(q)), "; \t\n"))
	return s == "COMMIT" || s == "END" || s == "COMMIT TRANSACTION" || s == "COMMIT WORK"
}

func indexZero(b []byte) int {
	for i, x := range b {
		if x == 0 {
			return i
		}
	}
	return -1
}

// readMessage reads one typed message: its body whole when it is at most
// maxMessage, else only its length (long), the rest left in r.
func readMessage(r *bufio.Reader) (typ byte, body []byte, long int, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, 0, err
	}
	n := int(binary.BigEndian.Uint32(hdr[1:])) - 4
	if n < 0 {
		return 0, nil, 0, errors.New("pgproxy: bad message length")
	}
	if n > maxMessage {
		return hdr[0], nil, n, nil
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, 0, err
	}
	return hdr[0], body, 0, nil
}

// writeMessage writes a message read by readMessage to w.
func writeMessage(w io.Writer, typ byte, body []byte, long int, r io.Reader) error {
	n := len(body)
	if long > 0 {
		n = long
	}
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(n+4))
	if long > 0 {
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		_, err := io.CopyN(w, r, int64(long))
		return err
	}
	_, err := w.Write(append(hdr[:], body...))
	return err
}

// A framer follows the server's message boundaries across chunks.
type framer struct {
	hdr    []byte // a partial header
	skip   int    // bytes left of the current message's body
	status byte   // the last ReadyForQuery's transaction status
}

// feed advances over b.
func (f *framer) feed(b []byte) { f.scan(b, false) }

// readyIn advances over b and says whether a ReadyForQuery ended in it.
func (f *framer) readyIn(b []byte) bool { return f.scan(b, true) }

func (f *framer) scan(b []byte, wantReady bool) bool {
	for len(b) > 0 {
		if f.skip > 0 {
			if f.skip == 1 && f.hdr[0] == 'Z' {
				f.status = b[0]
			}
			k := min(f.skip, len(b))
			f.skip -= k
			b = b[k:]
			if f.skip == 0 && wantReady && len(f.hdr) == 5 && f.hdr[0] == 'Z' {
				return true
			}
			continue
		}
		if len(f.hdr) == 5 {
			f.hdr = f.hdr[:0]
		}
		k := min(5-len(f.hdr), len(b))
		f.hdr = append(f.hdr, b[:k]...)
		b = b[k:]
		if len(f.hdr) == 5 {
			f.skip = int(binary.BigEndian.Uint32(f.hdr[1:])) - 4
			if f.skip <= 0 {
				f.skip = 0
				if wantReady && f.hdr[0] == 'Z' {
					return true
				}
			}
		}
	}
	return false
}

// startup forwards the startup message, which has no type byte. An
// SSLRequest or GSSENCRequest before it is answered 'N' by the proxy
// itself: the proxy reads the protocol, so its clients speak it in the
// clear. It returns false when the stream ended.
func (c *pipe) startup(r *bufio.Reader) bool {
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return false
		}
		n := int(binary.BigEndian.Uint32(hdr[:4]))
		code := binary.BigEndian.Uint32(hdr[4:])
		if n < 8 || n > maxMessage {
			return false
		}
		rest := make([]byte, n-8)
		if _, err := io.ReadFull(r, rest); err != nil {
			return false
		}
		if code == 80877103 || code == 80877104 { // SSLRequest, GSSENCRequest
			if _, err := c.client.Write([]byte{'N'}); err != nil {
				return false
			}
			continue
		}
		c.wait()
		_, err := c.server.Write(append(hdr[:], rest...))
		return err == nil
	}
}
