package bench

import (
	"math/bits"
	"time"
)

// histogram records latencies in microseconds in log-linear buckets: exact below 256 µs, then
// 128 buckets per power of two, so every recorded value is known to within 1/128 (0.8%). Memory
// is fixed (a few KiB) however long the run, which is why it is used instead of keeping samples.
type histogram struct {
	counts [histogramBuckets]uint64
	total  uint64
	sum    uint64 // microseconds, for the mean
	max    uint64
}

const (
	subBucketBits    = 7 // 128 sub-buckets per power of two
	subBuckets       = 1 << subBucketBits
	exactLimit       = 2 * subBuckets // values below this have a bucket each
	maxShift         = 24             // full precision up to 2^32 µs (71 minutes); beyond, the last bucket
	histogramBuckets = exactLimit + maxShift*subBuckets
)

// bucketOf maps a value in microseconds to its bucket.
func bucketOf(us uint64) int {
	if us < exactLimit {
		return int(us)
	}
	shift := min(bits.Len64(us)-(subBucketBits+1), maxShift)
	top := min(us>>shift, 2*subBuckets-1) // in [128, 256)
	return exactLimit + (shift-1)*subBuckets + int(top-subBuckets)
}

// bucketMid is the value reported for a bucket: the middle of the range it covers.
func bucketMid(i int) uint64 {
	if i < exactLimit {
		return uint64(i)
	}
	shift := (i-exactLimit)/subBuckets + 1
	low := uint64(subBuckets+(i-exactLimit)%subBuckets) << shift
	return low + (uint64(1)<<shift)/2
}

func (h *histogram) record(d time.Duration) {
	us := uint64(max(d.Microseconds(), 0))
	h.counts[bucketOf(us)]++
	h.total++
	h.sum += us
	h.max = max(h.max, us)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// quantile returns the latency below which the fraction q (0..1) of the recorded values fall,
// to the precision of a bucket, never above the largest value recorded.
func (h *histogram) quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(q*float64(h.total) + 0.5)
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(bucketMid(i), h.max)) * time.Microsecond
		}
	}
	return time.Duration(h.max) * time.Microsecond
}

func (h *histogram) maximum() time.Duration { return time.Duration(h.max) * time.Microsecond }

func (h *histogram) mean() time.Duration {
	if h.total == 0 {
		return 0
	}
	return time.Duration(h.sum/h.total) * time.Microsecond
}
