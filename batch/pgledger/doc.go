// Package pgledger keeps a batch ledger in PostgreSQL, for a fleet of
// workers on many machines.
package pgledger
