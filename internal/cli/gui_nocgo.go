//go:build !cgo

package cli

import (
	"fmt"
	"io"
)

// runGUI explains that this build has no window.
func runGUI(_ []string, _ io.Reader, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "this skiff was built without its window (CGO_ENABLED=0); use `skiff run`")
	return 1
}
