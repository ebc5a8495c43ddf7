package sink

import (
	"math/rand/v2"
	"testing"
)

// Hashes and partitions computed with the Java client itself
// (org.apache.kafka.common.utils.Utils.murmur2 and toPositive, kafka-clients
// 4.1.1), keys as UTF-8 bytes.
var javaMurmur2 = []struct {
	key        string
	hash       int32
	mod3, mod7 int
}{
	{"", 275646681, 0, 2},
	{"a", -1563381124, 1, 5},
	{"ab", 316155434, 2, 0},
	{"abc", 479470107, 0, 4},
	{"abcd", -1323649548, 2, 5},
	{"21", -973932308, 0, 3},
	{"foobar", -790332482, 0, 0},
	{"9191642889", 1700379838, 1, 3},
	{"order-1", 1221710326, 1, 4},
	{"customer-42", -542987495, 0, 1},
	{"a-little-bit-long-string", -985981536, 2, 1},
	{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971, 2, 3},
	{`"9191642889"`, 597734479, 1, 6},
	{"ünïcødé-ключ", -1534091484, 2, 0},
	{"\xff\x80\x00\x01\xfe", -173560464, 2, 2},
}

// refMurmur2 is Java's Utils.murmur2, transcribed for this test only, to
// pin kafka-go's balancer against many keys the table above lacks.
func refMurmur2(data []byte) int32 {
	const seed, m, r = uint32(0x9747b28c), uint32(0x5bd1e995), 24
	n := len(data)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

func TestMurmur2MatchesJava(t *testing.T) {
	for _, v := range javaMurmur2 {
		if got := refMurmur2([]byte(v.key)); got != v.hash {
			t.Errorf("reference murmur2(%q) = %d, Java %d", v.key, got, v.hash)
		}
		if got := JavaPartition([]byte(v.key), 3, nil); got != v.mod3 {
			t.Errorf("JavaPartition(%q, 3) = %d, Java %d", v.key, got, v.mod3)
		}
		if got := JavaPartition([]byte(v.key), 7, nil); got != v.mod7 {
			t.Errorf("JavaPartition(%q, 7) = %d, Java %d", v.key, got, v.mod7)
		}
	}
	// kafka-go's Murmur2Balancer against the reference on random keys and
	// partition counts.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		key := make([]byte, rng.IntN(40))
		for j := range key {
			key[j] = byte(rng.UintN(256))
		}
		n := 1 + rng.IntN(200)
		want := int(uint32(refMurmur2(key))&0x7fffffff) % n
		if got := JavaPartition(key, n, partitionList(n)); got != want {
			t.Fatalf("key %x, %d partitions: kafka-go %d, Java %d", key, n, got, want)
		}
	}
}
