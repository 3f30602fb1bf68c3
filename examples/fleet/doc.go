// Package fleet holds the ways to run creative batch as a fleet of workers
// on one jobs file, checked by its test against the fake service:
//
//   - job.yaml: a Kubernetes Job with parallelism and no index, a work queue
//     whose pods claim the jobs they run;
//   - indexed-job.yaml: an Indexed Job, one shard of the file per pod;
//   - loop.sh: a loop of processes on one machine.
package fleet
