// Package pgledger keeps a batch ledger in PostgreSQL, for a fleet of
// workers on many machines: package sqlledger's tables and statements
// over pgx (github.com/jackc/pgx/v5, through database/sql), in a module of
// its own so that neither the SDK nor a program that keeps its ledger in
// SQLite downloads it.
//
// Open takes a libpq URL (postgres://user:password@host:5432/db) and
// makes the ledger's tables in one transaction when the database has
// none. What PostgreSQL adds to sqlledger's rules:
//
//   - A run's liveness is the engine's: the run holds an advisory lock,
//     keyed by its token, on a connection of its own that no pool hands
//     around, and beats on the database's clock (clock_timestamp()); no
//     worker's clock is read. The lock's loss (its connection cut, the
//     server restarted) closes the session's Lost at once: the run stops
//     sending and says so. Another run takes it for gone when its lock is
//     free and its last heartbeat is older than a third of its lease (the
//     margin in which a cut-off worker has stopped on its own), or when its
//     heartbeat is older than its lease and a third (a stopped process,
//     whose lock is still held).
//   - Dead sessions end: the server ends a session idle in a transaction
//     for 10 s, so that the rows a stopped worker locked are free, and the
//     lock's session has TCP keepalives set by the run's lease, so that a
//     silent worker's lock is freed about one lease after it fell silent,
//     never before its own lease lapsed.
//   - A commit whose answer never came is an unknown outcome: the write is
//     tried again and reads back, by the run's token, what the first try
//     wrote (sqlledger's rule).
//   - Claims of new jobs and records of a run's own attempts go in
//     batches: one statement for every goroutine that asks at once, which
//     over a network of 20 ms a round trip keeps a job's ledger traffic
//     under half a round trip. What a batch does not take goes sqlledger's
//     way, one transaction a job.
//
// Packages pgtest (a throwaway server for tests) and pgproxy (a fault
// proxy) serve its tests, the command line's and the benchmarks.
package pgledger
