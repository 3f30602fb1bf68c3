package sqliteledger

import (
	"strings"

	"golang.org/x/sys/unix"
)

// networkTypes name the file systems, by statfs(2)'s type name, whose
// locks SQLite cannot rely on.
var networkTypes = map[string]string{"nfs": "NFS", "smbfs": "SMB", "afpfs": "AFP", "webdav": "WebDAV", "macfuse": "FUSE", "osxfuse": "FUSE"}

// networkFS names the network file system dir is on, or says "".
func networkFS(dir string) (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", err
	}
	name := unix.ByteSliceToString(st.Fstypename[:])
	if n, ok := networkTypes[name]; ok {
		return n, nil
	}
	if strings.HasPrefix(name, "fuse") {
		return "FUSE", nil
	}
	return "", nil
}
