//go:build !unix

package crashwatch

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
