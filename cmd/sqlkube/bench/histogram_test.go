package bench

import (
	"math"
	"testing"
	"time"
)

func TestBucketsKeepOnePercentPrecision(t *testing.T) {
	for v := uint64(1); v < 1<<32; v = v*17/16 + 1 {
		mid := bucketMid(bucketOf(v))
		if rel := math.Abs(float64(mid)-float64(v)) / float64(v); rel > 1.0/128 {
			t.Fatalf("value %d reported as %d: %.2f%% off", v, mid, rel*100)
		}
	}
}

func TestBucketsAreOrdered(t *testing.T) {
	last := -1
	for v := uint64(0); v < 1<<20; v++ {
		b := bucketOf(v)
		if b < last || b >= histogramBuckets {
			t.Fatalf("value %d in bucket %d after bucket %d", v, b, last)
		}
		last = b
	}
}

func TestQuantilesOfUniformLatencies(t *testing.T) {
	var h histogram
	for us := 1; us <= 10000; us++ {
		h.record(time.Duration(us) * time.Microsecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5 * time.Millisecond}, {0.9, 9 * time.Millisecond}, {0.99, 9900 * time.Microsecond}} {
		got := h.quantile(tc.q)
		if rel := math.Abs(float64(got-tc.want)) / float64(tc.want); rel > 0.01 {
			t.Errorf("p%v = %v, want %v within 1%%", tc.q*100, got, tc.want)
		}
	}
	if h.maximum() != 10*time.Millisecond {
		t.Errorf("max = %v, want 10ms", h.maximum())
	}
	if h.mean() != 5000*time.Microsecond {
		t.Errorf("mean = %v, want 5ms", h.mean())
	}
}

func TestQuantileNeverExceedsMax(t *testing.T) {
	var h histogram
	h.record(100_001 * time.Microsecond)
	if got := h.quantile(0.99); got != 100_001*time.Microsecond {
		t.Errorf("p99 of one value = %v, want that value", got)
	}
}

func TestEmptyHistogramReportsZero(t *testing.T) {
	var h histogram
	if h.quantile(0.5) != 0 || h.maximum() != 0 || h.mean() != 0 {
		t.Error("empty histogram should report zeros")
	}
}

func TestMergeAddsCounts(t *testing.T) {
	var a, b histogram
	a.record(time.Millisecond)
	b.record(3 * time.Millisecond)
	b.record(3 * time.Millisecond)
	a.merge(&b)
	if a.total != 3 || a.maximum() != 3*time.Millisecond || a.quantile(0.5) != 3*time.Millisecond {
		t.Errorf("merged: total %d max %v p50 %v", a.total, a.maximum(), a.quantile(0.5))
	}
}
