package service

import "fmt"

// Access rights of the pipe's ACEs (winnt.h). A pipe's FILE_APPEND_DATA is
// FILE_CREATE_PIPE_INSTANCE: whoever holds it may create a server instance
// of \\.\pipe\skiff beside the service's and answer its clients, so it is
// not granted to members. GENERIC_WRITE, granted before, maps to
// FILE_GENERIC_WRITE, which includes it.
const (
	fileReadData           = 0x0001
	fileWriteData          = 0x0002
	fileCreatePipeInstance = 0x0004 // FILE_APPEND_DATA
	fileReadEA             = 0x0008
	fileReadAttributes     = 0x0080
	fileWriteAttributes    = 0x0100
	readControl            = 0x20000
	synchronize            = 0x100000

	fileGenericRead = readControl | fileReadData | fileReadAttributes | fileReadEA | synchronize // 0x120089

	// memberPipeAccess is what members get, and what clients ask for:
	// read, write data, and set the pipe's mode (FILE_WRITE_ATTRIBUTES);
	// READ_CONTROL lets the client read the pipe's owner (checkPipeServer).
	memberPipeAccess = fileGenericRead | fileWriteData | fileWriteAttributes // 0x12018b
)

// pipeSDDL is the named pipe's security descriptor: SYSTEM and the
// Administrators full control, members of the operators' group (memberSID,
// "" when the group does not exist) memberPipeAccess, and nothing
// inherited (P).
func pipeSDDL(memberSID string) string {
	s := "D:P(A;;FA;;;SY)(A;;FA;;;BA)"
	if memberSID != "" {
		s += fmt.Sprintf("(A;;0x%x;;;%s)", memberPipeAccess, memberSID)
	}
	return s
}
