// Package pairbench measures our code beside a baseline in one benchmark
// loop, alternating the two, so that a shared, noisy machine slows both
// alike; it reports each one's mean and our overhead in percent.
package pairbench

import (
	"testing"
	"time"
)

// Run times base and ours in turn, b.N times each, and reports
// "<baseName>-ns/call", "<oursName>-ns/call" and "overhead-%"; it returns
// the time each took in all, for metrics of the caller's own.
func Run(b *testing.B, baseName string, base func(*testing.B), oursName string, ours func(*testing.B)) (tBase, tOurs time.Duration) {
	b.Helper()
	for b.Loop() {
		t0 := time.Now()
		base(b)
		t1 := time.Now()
		ours(b)
		tBase += t1.Sub(t0)
		tOurs += time.Since(t1)
	}
	b.ReportMetric(float64(tBase.Nanoseconds())/float64(b.N), baseName+"-ns/call")
	b.ReportMetric(float64(tOurs.Nanoseconds())/float64(b.N), oursName+"-ns/call")
	b.ReportMetric(100*(float64(tOurs)/float64(tBase)-1), "overhead-%")
	return tBase, tOurs
}
