package sqliteledger

import "golang.org/x/sys/unix"

// networkTypes name the file systems, by statfs(2)'s magic number, whose
// locks SQLite cannot rely on: shared over a network, or mounted through
// FUSE (sshfs, s3fs, gcsfuse, rclone mount).
var networkTypes = map[int64]string{
	unix.NFS_SUPER_MAGIC:  "NFS",
	unix.SMB_SUPER_MAGIC:  "SMB",
	unix.SMB2_SUPER_MAGIC: "SMB2",
	unix.CIFS_SUPER_MAGIC: "CIFS",
	unix.FUSE_SUPER_MAGIC: "FUSE",
	unix.V9FS_MAGIC:       "9P",
	unix.CEPH_SUPER_MAGIC: "Ceph",
	unix.AFS_SUPER_MAGIC:  "AFS",
	unix.AFS_FS_MAGIC:     "AFS",
	unix.CODA_SUPER_MAGIC: "Coda",
	unix.NCP_SUPER_MAGIC:  "NCP",
}

// networkFS names the network file system dir is on, or says "".
func networkFS(dir string) (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", err
	}
	return networkTypes[int64(st.Type)], nil
}
