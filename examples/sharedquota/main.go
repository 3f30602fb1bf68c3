// Command sharedquota runs three worker processes that share one quota of
// calls to the Creative Generation Service through Redis: each worker's
// Client waits on a GCRA limiter kept in Redis (creative.WithRateLimiter),
// so the service sees the fleet's rate, not three times it.
//
// It starts the SDK's fake service in process, counts the requests that
// arrive there, and reports the rate the service saw:
//
//	redis-server --port 6390 --save '' &
//	go run . -redis 127.0.0.1:6390 -rate 10
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		if err := worker(context.Background(), os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "sharedquota worker:", err)
			os.Exit(1)
		}
		return
	}
	var c config
	flag.StringVar(&c.redis, "redis", "127.0.0.1:6379", "address of the Redis server that holds the quota")
	flag.IntVar(&c.workers, "workers", 3, "worker processes")
	flag.IntVar(&c.calls, "calls", 20, "calls each worker makes")
	flag.IntVar(&c.rate, "rate", 10, "calls per second for the whole fleet")
	flag.IntVar(&c.burst, "burst", 1, "calls the fleet may make at once")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sharedquota:", err)
		os.Exit(1)
	}
	fmt.Print(rep)
}
