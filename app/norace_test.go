//go:build !race

package app

// raceEnabled: the race detector slows everything several times over.
const raceEnabled = false
