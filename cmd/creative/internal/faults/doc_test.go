package faults

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// The package's doc says how many schedules CI runs, which are the
// defaults of TestFaults: one count for a plain run, one under the race
// detector.
func TestTheDocSaysHowManySchedulesCIRuns(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`CI runs (\d+) over each engine, and (\d+)\s*(?://\s*)?more under the race detector`).FindSubmatch(doc)
	if m == nil {
		t.Fatal("doc.go does not say how many schedules CI runs, plainly and under the race detector")
	}
	want := m[1]
	if raceOn {
		want = m[2]
	}
	if got := strconv.Itoa(defaultSchedules); got != string(want) {
		t.Errorf("doc.go says CI runs %s schedules over each engine here; TestFaults runs %s", want, got)
	}
}

// raceOn is set under the race detector (race_test.go).
var raceOn bool
