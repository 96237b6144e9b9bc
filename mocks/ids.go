package mocks

import (
	"math/rand/v2"
	"sync"
)

const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// idSource makes provider-looking identifiers (pi_..., re_..., req_...) from
// a seeded generator, so that a run with the same seed and the same request
// order produces the same identifiers.
type idSource struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func newIDSource(seed int64) *idSource {
	return &idSource{rng: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))}
}

// next returns prefix followed by n characters of [0-9A-Za-z].
func (s *idSource) next(prefix string, n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := make([]byte, len(prefix), len(prefix)+n)
	copy(b, prefix)
	for range n {
		b = append(b, idAlphabet[s.rng.IntN(len(idAlphabet))])
	}
	return string(b)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
