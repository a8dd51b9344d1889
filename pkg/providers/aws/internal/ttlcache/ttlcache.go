// Package ttlcache is a small thread-safe map whose entries expire after a
// time-to-live measured on an injected clock, so tests drive expiry with a
// fake clock instead of sleeping. The AWS providers keep API answers in it for
// upstream's TTLs (1 minute for subnets, security groups and images, 15
// minutes for instance profiles, 24 hours for SSM parameters).
package ttlcache

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Cache maps string keys to values of type V until their TTL passes.
type Cache[V any] struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	ttl   time.Duration
	items map[string]entry[V]
	sets  int
}

type entry[V any] struct {
	value   V
	expires time.Time
}

// New returns an empty cache whose entries live for ttl by default.
func New[V any](clk clock.PassiveClock, ttl time.Duration) *Cache[V] {
	return &Cache[V]{clock: clk, ttl: ttl, items: map[string]entry[V]{}}
}

// TTL is the default time-to-live.
func (c *Cache[V]) TTL() time.Duration { return c.ttl }

// Get returns the live value of key.
func (c *Cache[V]) Get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	if !c.clock.Now().Before(e.expires) {
		delete(c.items, key)
		var zero V
		return zero, false
	}
	return e.value, true
}

// Load returns the live value of key, or calls fetch and stores what it returns for the
// default TTL. An error is returned as is and nothing is stored, so the next call asks again.
func (c *Cache[V]) Load(key string, fetch func() (V, error)) (V, error) {
	if v, ok := c.Get(key); ok {
		return v, nil
	}
	v, err := fetch()
	if err != nil {
		return v, err
	}
	c.Set(key, v)
	return v, nil
}

// Set stores value under key for the default TTL.
func (c *Cache[V]) Set(key string, value V) { c.SetWithTTL(key, value, c.ttl) }

// SetWithTTL stores value under key for ttl.
func (c *Cache[V]) SetWithTTL(key string, value V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	c.items[key] = entry[V]{value: value, expires: now.Add(ttl)}
	// Sweep expired entries now and then so keys that are never read again
	// (a deleted EC2NodeClass's selector hash) do not accumulate.
	c.sets++
	if c.sets%256 == 0 {
		for k, e := range c.items {
			if !now.Before(e.expires) {
				delete(c.items, k)
			}
		}
	}
}

// Delete removes key.
func (c *Cache[V]) Delete(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.items, key)
}

// DeleteFunc removes every key for which match returns true.
func (c *Cache[V]) DeleteFunc(match func(key string, value V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.items {
		if match(k, e.value) {
			delete(c.items, k)
		}
	}
}

// Flush removes every entry.
func (c *Cache[V]) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items = map[string]entry[V]{}
}

// Len counts the entries, expired ones included until they are swept.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}
