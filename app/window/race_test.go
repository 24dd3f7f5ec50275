//go:build race

package window

// raceEnabled: the race detector slows everything several times over.
const raceEnabled = true
