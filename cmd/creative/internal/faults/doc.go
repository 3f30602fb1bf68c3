// Package faults holds the randomized fault harness of batch: two or three
// worker processes (the test binary run again as a worker) share one
// ledger in a database engine (an engine is the harness's parameter:
// SQLite, and PostgreSQL behind a proxy in postgres_test.go, whose
// faults drop, reset and stall the workers' connections, cut one before
// or after its commit, and restart the server) and one folder of outputs, against the fake service, while
// faults drawn from a seed strike the ledger (a write that fails, lands
// and loses its answer, is slow or hangs past the lease; a heartbeat that
// fails or hangs; a process killed once its claim took a share of the
// budget), the outputs (a failed write, a full disk), the service (a
// dropped or stalled connection, 429, 5xx, a refused key) and the
// processes (SIGKILL, SIGSTOP past the lease then SIGCONT, with a worker
// started meanwhile to take its jobs over, SIGTERM). After each schedule a
// rerun and a --resend-unknown run end the work, and the invariants are
// checked against the calls the service answered: no job is paid twice
// unless resent, with ResendUnknown, after the worker that paid first was
// really gone (on one machine: killed or ended, never merely stopped);
// every paid answer is in the ledger or handed back by its worker;
// nothing is recorded done without its files; every process ends within a
// bound once its faults end; and a schedule's spend cap (budget_test.go)
// is never passed: the calls that may be paid, counted at the service,
// stay within each worker's limit and within what the ledger took, and
// batch status shows the ledger's budget.
//
// Each schedule logs its seed; FAULTS_SEED=<seed> replays one, and
// FAULTS_SCHEDULES=<n> runs n of them (CI runs 25 over each engine, and 5
// more under the race detector):
//
//	FAULTS_SCHEDULES=2000 go test -run TestFaults -timeout 0 ./internal/faults/
package faults
