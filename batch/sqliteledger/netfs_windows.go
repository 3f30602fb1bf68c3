package sqliteledger

import (
	"path/filepath"

	"golang.org/x/sys/windows"
)

// networkFS says "network drive" when dir is on a drive of a network
// share, or "".
func networkFS(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	vol := filepath.VolumeName(abs) + `\`
	p, err := windows.UTF16PtrFromString(vol)
	if err != nil {
		return "", err
	}
	if windows.GetDriveType(p) == windows.DRIVE_REMOTE || len(vol) > 3 {
		return "network drive", nil // a remote drive letter, or a UNC path
	}
	return "", nil
}
