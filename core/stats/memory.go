package stats

import "runtime/metrics"

// Memory is the process's memory use.
type Memory struct {
	RSS        uint64 // resident set size in bytes: what the OS has given the whole process
	Heap       uint64 // bytes of live and not yet swept Go heap objects (HeapAlloc)
	Goroutines uint64 // goroutines now: a flow costs a few, so a count that stays up after its flows close is a leak
}

// memoryMetrics are the runtime metrics ReadMemory reads.
var memoryMetrics = [...]string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/sched/goroutines:goroutines",
}

// ReadMemory returns the process's memory use. RSS comes from the OS where
// it can be read (/proc/self/status on Linux); elsewhere it is the memory
// the Go runtime has mapped and not returned, which is close for a pure-Go
// process.
func ReadMemory() Memory {
	var samples [len(memoryMetrics)]metrics.Sample
	for i, name := range memoryMetrics {
		samples[i].Name = name
	}
	metrics.Read(samples[:])
	value := func(i int) uint64 {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return samples[i].Value.Uint64()
	}
	m := Memory{Heap: value(0), Goroutines: value(3)}
	if rss, ok := osRSS(); ok {
		m.RSS = rss
	} else {
		m.RSS = value(1) - value(2)
	}
	return m
}
