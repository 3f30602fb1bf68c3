package cassette

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/creativegen/creative-go/internal/redact"
)

// This file describes the cassette's types to fmt and log/slog without
// the access keys they hold: a Cassette learns the key of every request
// it sees, and Options and CheckOptions carry keys a caller gives. Each
// prints the same text for every verb and flag (%v, %+v, %#v, %s, %x).

// String describes the cassette by its folder and mode, without the keys
// it knows.
func (c *Cassette) String() string {
	if c == nil {
		return "cassette.Cassette(nil)"
	}
	return fmt.Sprintf("cassette.Cassette{Dir: %q, Mode: %s, Keys: %s}", c.dir, c.mode, redact.Marker)
}

// Format prints the cassette as String does, for every verb.
func (c *Cassette) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// LogValue describes the cassette to log/slog without its keys.
func (c *Cassette) LogValue() slog.Value {
	if c == nil {
		return slog.StringValue("cassette.Cassette(nil)")
	}
	return slog.GroupValue(slog.String("dir", c.dir), slog.String("mode", c.mode.String()), slog.String("keys", redact.Marker))
}

// String describes the options without their keys.
func (o Options) String() string {
	return fmt.Sprintf("cassette.Options{Keys: %d %s, NoPacing: %t, HTTPClient: %t, MaxBodyBytes: %d, OnMiss: %t, IgnoreEnv: %t}",
		len(o.Keys), redact.Marker, o.NoPacing, o.HTTPClient != nil, o.MaxBodyBytes, o.OnMiss != nil, o.IgnoreEnv)
}

// Format prints the options as String does, for every verb.
func (o Options) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, o.String()) }

// LogValue describes the options to log/slog without their keys.
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }

// String describes the options without their keys.
func (o CheckOptions) String() string {
	return fmt.Sprintf("cassette.CheckOptions{Keys: %d %s, Patterns: %d}", len(o.Keys), redact.Marker, len(o.Patterns))
}

// Format prints the options as String does, for every verb.
func (o CheckOptions) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, o.String()) }

// LogValue describes the options to log/slog without their keys.
func (o CheckOptions) LogValue() slog.Value { return slog.StringValue(o.String()) }
