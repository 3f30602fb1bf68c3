// Package pgledger keeps a batch ledger in PostgreSQL, for a fleet of
// workers on many machines: package sqlledger's tables and statements
// over pgx (github.com/jackc/pgx/v5, through database/sql), in a module of
// its own so that neither the SDK nor a program that keeps its ledger in
// SQLite downloads it.
//
// Start with Open, which takes a libpq URL
// (postgres://user:password@host:5432/db) and makes the ledger's tables in
// one transaction when the database has none, and give the ledger to
// batch.New. What PostgreSQL adds to sqlledger's rules (an advisory lock
// for a run's liveness, the database's clock, sessions that end, claims
// and records sent in batches) is in docs/fleet.md, section PostgreSQL.
//
// Packages pgtest (a throwaway server for tests) and pgproxy (a fault
// proxy) serve its tests, the command line's and the benchmarks.
package pgledger
