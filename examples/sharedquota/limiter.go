package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// redisLimiter is a creative.RateLimiter whose quota lives in Redis: every
// process that uses the same key draws on one quota. redis_rate implements
// GCRA (the generic cell rate algorithm) as a Lua script that Redis runs
// atomically, so workers on any number of machines never overdraw it.
type redisLimiter struct {
	limiter *redis_rate.Limiter
	key     string
	limit   redis_rate.Limit
}

func newRedisLimiter(rdb *redis.Client, key string, perSecond, burst int) *redisLimiter {
	return &redisLimiter{
		limiter: redis_rate.NewLimiter(rdb),
		key:     key,
		limit:   redis_rate.Limit{Rate: perSecond, Period: time.Second, Burst: burst},
	}
}

// Wait blocks until the shared quota allows one more attempt, or ctx ends.
func (l *redisLimiter) Wait(ctx context.Context) error {
	for {
		res, err := l.limiter.Allow(ctx, l.key, l.limit)
		if err != nil {
			return fmt.Errorf("sharedquota: the quota in Redis: %w", err)
		}
		if res.Allowed > 0 {
			return nil
		}
		t := time.NewTimer(res.RetryAfter)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
