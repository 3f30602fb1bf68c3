// Package faults holds the randomized fault harness of batch: two or three
// worker processes (the test binary run again as a worker) share one
// ledger, a local folder or a bucket on a real S3-compatible server,
// against the fake service, while faults drawn from a seed strike the
// store (a write that hangs, is slow, fails, or meets a full disk), the
// service (a dropped or stalled connection, 429, 5xx, a refused key) and
// the processes (SIGKILL, SIGSTOP then SIGCONT after more than the lease,
// SIGTERM). After each schedule a rerun and a --resend-unknown run end
// the work, and the invariants are checked against the calls the service
// answered: no job is paid twice unless resent, with ResendUnknown, after
// the worker that paid first was really gone; every paid answer is in the
// ledger or handed back by its worker; nothing is recorded done without
// its files; every process ends within a bound once its faults end.
// A schedule may run its workers under a spend cap (budget_test.go): the
// calls that may be paid, counted at the service, must stay within the
// shares of the budget taken before them, and batch status must show
// the ledger's shares.
//
// Each schedule logs its seed; FAULTS_SEED=<seed> replays one, and
// FAULTS_SCHEDULES=<n> runs n of them (CI runs 50 over each store):
//
//	FAULTS_SCHEDULES=2000 go test -run TestFaults -timeout 0 ./internal/faults/
package faults
