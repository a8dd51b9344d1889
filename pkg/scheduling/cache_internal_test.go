package scheduling

import "testing"

// The memos of a Cache's entries stay within maxMemoBytes together, and an evicted entry stops
// counting.
func TestMemoBudget(t *testing.T) {
	c := newCache(2)
	a := c.put("a", &preparedPool{})
	b := c.put("b", &preparedPool{})
	const size = maxMemoBytes / 10
	for i := 0; i < 25; i++ {
		e := a
		if i%2 == 1 {
			e = b
		}
		memoPut(&e.memo, &e.memo.domains, string(rune('A'+i)), []string{"x"}, size)
		if got := c.memoBytes.Load(); got > maxMemoBytes {
			t.Fatalf("after %d puts the memos hold %d bytes, over the budget %d", i+1, got, maxMemoBytes)
		}
	}
	if len(a.memo.domains)+len(b.memo.domains) >= 25 {
		t.Fatalf("nothing was cleared: %d + %d entries", len(a.memo.domains), len(b.memo.domains))
	}
	before, aBytes := c.memoBytes.Load(), a.memo.bytes
	c.put("c", &preparedPool{}) // evicts a
	if got := c.memoBytes.Load(); a.memo.owner != nil || got != before-aBytes {
		t.Fatalf("evicted entry still counted: owner %v, cache holds %d, want %d", a.memo.owner, got, before-aBytes)
	}
	before = c.memoBytes.Load()
	memoPut(&a.memo, &a.memo.domains, "late", []string{"x"}, size)
	if got := c.memoBytes.Load(); got > before {
		t.Fatalf("a put into an evicted entry's memo was counted: %d > %d", got, before)
	}
}
