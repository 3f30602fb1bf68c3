package cli

import (
	"github.com/creativegen/creative-go/creativetest/cassette"
)

// A run records to or replays from the cassette CREATIVE_CASSETTE names,
// in the mode CREATIVE_RECORD_MODE names (replay when unset): a script or
// a batch recorded once replays with no call, and in replay needs no key
// and no base URL.

// openCassette opens the run's cassette, nil when none is named. A
// replay that has no base URL or key gets stand-ins: nothing is sent.
func (a *app) openCassette() (*cassette.Cassette, error) {
	cas, err := cassette.FromEnv(a.getenv)
	if err != nil || cas == nil {
		return nil, err
	}
	if cas.Mode() == cassette.Replay && a.g.baseURL == "" && !a.g.fake {
		a.g.baseURL = "https://cassette.invalid"
	}
	return cas, nil
}

// replayKey is the key of a run whose environment gives none: a stand-in
// when replaying, "" otherwise.
func replayKey(cas *cassette.Cassette, key string) string {
	if key == "" && cas != nil && cas.Mode() == cassette.Replay {
		return cassette.AccessKey()
	}
	return key
}

// closeCassette returns the client's close followed by the cassette's;
// when no client was made (err), the cassette is closed at once.
func closeCassette(cas *cassette.Cassette, close func(), err error) func() {
	if err != nil {
		_ = cas.Close()
		return close
	}
	return func() { close(); _ = cas.Close() }
}
