package cli

import (
	"cmp"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/cmd/creative/internal/batchcmd"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
)

// cloudProgram is the program that opens bucket URLs: creative hands it a
// command that names one, so that no other command loads three clouds'
// SDKs at start-up.
const cloudProgram = "creative-cloud"

// Environment of the hand-off: $CREATIVE_CLOUD names the creative-cloud to
// run, overriding the search; creative sets $CREATIVE_CLOUD_CALLER to its
// build's version for creative-cloud to compare with its own, and
// $CREATIVE_CLOUD_FOUND to where it found the program it runs, for the
// message of a program that is not creative-cloud.
const (
	envCloud  = "CREATIVE_CLOUD"
	envCaller = "CREATIVE_CLOUD_CALLER"
	envFound  = "CREATIVE_CLOUD_FOUND"
)

// exitStatus ends the command with a status and no message: the status of
// the creative-cloud it ran as a child.
type exitStatus struct{ code int }

// Error says which status.
func (e *exitStatus) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// namesBucket reports whether cmd, run with args, names a bucket URL
// where its takesBuckets annotation says it takes one.
func namesBucket(cmd *cobra.Command, args []string) bool {
	for where := range strings.SplitSeq(cmd.Annotations[cmdutil.TakesBuckets], ",") {
		switch where {
		case "jobs":
			if len(args) > 0 && batchcmd.IsBucket(args[0]) {
				return true
			}
		case "out":
			if f := cmd.Flags().Lookup("out"); f != nil && batchcmd.IsBucket(f.Value.String()) {
				return true
			}
		}
	}
	return false
}

// handOverBuckets hands the whole command over to creative-cloud when it
// names a bucket URL and this build opens none. It comes before anything
// is checked, printed, sent or created, since creative-cloud does it all
// again. A command that was itself handed over is refused instead: the
// program found as creative-cloud opens no bucket either, and handing it
// on would run it again, for ever.
func (a *app) handOverBuckets(cmd *cobra.Command, args []string) error {
	if a.buckets != nil || !namesBucket(cmd, args) {
		return nil
	}
	if a.getenv(envCaller) != "" {
		return handedBack(a.getenv(envFound))
	}
	if a.handOver == nil {
		return cmdutil.ErrNoCloud
	}
	return a.handOver()
}

// handedBack is the refusal, in a program without bucket drivers, of a
// command handed over to it as creative-cloud: found says where creative
// found it ("" when not told).
func handedBack(found string) error {
	if found != "" {
		found = " (" + found + ")"
	}
	return cmdutil.Usagef("the program found as %s%s handed the command back to creative, so it is not %s (a copy of creative, or a link to it?): install both again with go install ./cmd/creative/..., or unset %s if it was set by hand", cloudProgram, found, cloudProgram, envCaller)
}

// handOverToCloud runs creative-cloud with args and this process's
// environment, plus its version in $CREATIVE_CLOUD_CALLER and where it was
// found in $CREATIVE_CLOUD_FOUND. On unix it returns only on failure.
func handOverToCloud(args []string) error {
	path, from, err := findCloud(os.Getenv)
	if err != nil {
		return err
	}
	if err := checkCloud(path, buildInfo()); err != nil {
		return err
	}
	return execCloud(path, args, callerEnv(os.Environ(), handOffVersion(buildInfo(), commandTree()), path+", "+from))
}

// callerEnv is env with $CREATIVE_CLOUD_CALLER set to version and
// $CREATIVE_CLOUD_FOUND to found: any value they held is dropped, since
// exec(2) passes duplicates on and the first would win.
func callerEnv(env []string, version, found string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if !strings.HasPrefix(kv, envCaller+"=") && !strings.HasPrefix(kv, envFound+"=") {
			out = append(out, kv)
		}
	}
	return append(out, envCaller+"="+version, envFound+"="+found)
}

// findCloud finds creative-cloud: $CREATIVE_CLOUD, else beside the running
// executable (symbolic links followed, so that a link to creative finds
// the creative-cloud installed with it), else on PATH. from says which, for
// messages. A program named relative to the current folder is refused,
// since it would be given the access key: $CREATIVE_CLOUD must be an
// absolute path, and a PATH entry such as "." is passed over as
// exec.LookPath does.
func findCloud(getenv func(string) string) (path, from string, err error) {
	if p := getenv(envCloud); p != "" {
		if !filepath.IsAbs(p) {
			return "", "", cmdutil.Usagef("$%s must be an absolute path, and is %q: a relative one would run whatever program of that name the current folder holds", envCloud, p)
		}
		return p, "named by $" + envCloud, nil
	}
	name := cloudProgram
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if self, err := os.Executable(); err == nil {
		if self, err = filepath.EvalSymlinks(self); err == nil {
			p := filepath.Join(filepath.Dir(self), name)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return p, "beside " + self, nil
			}
		}
	}
	p, err := exec.LookPath(cloudProgram)
	if errors.Is(err, exec.ErrDot) || err == nil && !filepath.IsAbs(p) {
		return "", "", cmdutil.Usagef("the %s found on PATH is %q, relative to the current folder, and is not run: give its absolute path in $%s, or take relative folders out of PATH", cloudProgram, p, envCloud)
	}
	if err != nil {
		return "", "", cmdutil.ErrNoCloud
	}
	return p, "on PATH", nil
}

// checkCloud reads the build information of the program at path from its
// file, before it is run with the access key in its environment, and
// refuses it unless it is the creative-cloud of creative's own build
// (own): the same module and program, the same version and revision
// (modified or not), and the same version of every module creative is
// built of. What the file cannot tell, the commands and flags of two
// builds that recorded no revision, creative-cloud compares once run (see
// checkCaller).
func checkCloud(path string, own *debug.BuildInfo) error {
	refuse := func(why string, args ...any) error {
		return cmdutil.Usagef("%s is not run: %s: install both again with go install ./cmd/creative/...", path, fmt.Sprintf(why, args...))
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return refuse("its build cannot be read (%v), so it is not a creative-cloud built with creative", err)
	}
	if own == nil {
		return refuse("this creative holds no build information to compare it with")
	}
	if want := own.Main.Path + "/" + cloudProgram; bi.Path != want || bi.Main.Path != own.Main.Path {
		return refuse("it is the program %s of module %s, not %s", bi.Path, bi.Main.Path, want)
	}
	if got, want := buildVersion(bi), buildVersion(own); got != want {
		return refuse("it is of another build (%s; creative is %s)", got, want)
	}
	deps := map[string]string{}
	for _, d := range bi.Deps {
		deps[d.Path] = moduleVersion(d)
	}
	for _, d := range own.Deps {
		if got, want := deps[d.Path], moduleVersion(d); got != want {
			return refuse("it is built with module %s %s, and creative with %s", d.Path, cmp.Or(got, "missing"), want)
		}
	}
	return nil
}

// buildVersion is the module version and revision a build recorded, as
// handOffVersion words them.
func buildVersion(bi *debug.BuildInfo) string {
	v, _, _ := strings.Cut(handOffVersion(bi, ""), " sdk ")
	return v
}

// moduleVersion words a module of a build: its version and checksum, and
// what replaced it.
func moduleVersion(m *debug.Module) string {
	v := strings.TrimSpace(m.Version + " " + m.Sum)
	if m.Replace != nil {
		v += " => " + moduleVersion(m.Replace)
	}
	return v
}

// handOffVersion is the version creative and creative-cloud compare: the
// module's version and the revision it was built from (marked when built
// with changes not committed), as --version prints them, the SDK's
// version, and tree, the digest of the command line the build makes (see
// treeDigest). Two builds of one commit agree whatever Go built them;
// builds of two commits or two releases do not, nor builds that recorded
// no revision (a (devel) build) whose commands or flags differ.
func handOffVersion(bi *debug.BuildInfo, tree string) string {
	if bi == nil {
		bi = &debug.BuildInfo{Main: debug.Module{Version: "unknown"}}
	}
	v := []string{bi.Main.Version}
	modified := false
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			v = append(v, s.Value)
		case s.Key == "vcs.modified" && s.Value == "true":
			modified = true
		}
	}
	if modified {
		v = append(v, "modified")
	}
	return strings.Join(append(v, "sdk", creative.Version), " ") + commandsWord + tree
}

// commandsWord comes before the digest of the command line in a hand-off
// version.
const commandsWord = ", commands "

// commandTree is treeDigest of this build's command line.
var commandTree = sync.OnceValue(func() string {
	a := &app{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	a.con = &console{w: io.Discard}
	return treeDigest(a.commands())
})

// treeDigest is a short digest (12 hexadecimal digits of SHA-256) of the
// command tree under root: every command's path, with the name, shorthand,
// type and default of each of its flags, sorted. Two builds whose command
// lines differ in one flag differ in it. root must not have run: running
// adds help flags.
func treeDigest(root *cobra.Command) string {
	var lines []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := c.CommandPath()
		lines = append(lines, path)
		seen := map[string]bool{}
		flag := func(f *pflag.Flag) {
			if !seen[f.Name] {
				seen[f.Name] = true
				lines = append(lines, fmt.Sprintf("%s --%s -%s %s %q", path, f.Name, f.Shorthand, f.Value.Type(), f.DefValue))
			}
		}
		c.PersistentFlags().VisitAll(flag)
		c.Flags().VisitAll(flag)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])[:12]
}

// checkCaller refuses, in creative-cloud, a hand-off from a creative of
// another version: the two would disagree on the command line.
func (a *app) checkCaller() error {
	caller := a.getenv(envCaller)
	if a.buckets == nil || caller == "" {
		return nil
	}
	own := handOffVersion(buildInfo(), commandTree())
	if caller == own {
		return nil
	}
	callerBuild, callerTree, told := strings.Cut(caller, commandsWord)
	ownBuild, ownTree, _ := strings.Cut(own, commandsWord)
	if told && callerBuild == ownBuild {
		return cmdutil.Usagef("creative and %s were built from different sources: both are %s, but their commands and flags differ (digest %s in creative, %s in %s): install both again with go install ./cmd/creative/...", cloudProgram, ownBuild, callerTree, ownTree, cloudProgram)
	}
	return cmdutil.Usagef("creative and %s are of different versions (creative %s; %s %s): install both again with go install ./cmd/creative/...", cloudProgram, caller, cloudProgram, own)
}

// handedOver reports the status of a command creative-cloud ran.
func handedOver(err error) (int, bool) {
	var st *exitStatus
	if errors.As(err, &st) {
		return st.code, true
	}
	return 0, false
}
