package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	creative "github.com/creativegen/creative-go"
)

// sdkModule is the module of the SDK, as build information names it.
const sdkModule = "github.com/creativegen/creative-go"

// versionText is what creative --version and creative version print, for
// a bug report: the command's module version and the revision it was
// built from, as the Go toolchain recorded them in bi (nil when the binary
// holds no build information), then the SDK's version and Go's.
func versionText(bi *debug.BuildInfo) string {
	if bi == nil {
		bi = &debug.BuildInfo{Main: debug.Module{Version: "unknown"}}
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	var b strings.Builder
	fmt.Fprintf(&b, "creative  %s\n", bi.Main.Version)
	switch rev := vcs["vcs.revision"]; {
	case rev == "":
		b.WriteString("revision  not recorded (a build outside a git checkout, in a git worktree, or with -buildvcs=false records none)\n")
	case vcs["vcs.modified"] == "true":
		fmt.Fprintf(&b, "revision  %s, with changes not committed\n", rev)
	default:
		fmt.Fprintf(&b, "revision  %s\n", rev)
	}
	if t := vcs["vcs.time"]; t != "" {
		fmt.Fprintf(&b, "committed %s\n", t)
	}
	fmt.Fprintf(&b, "sdk       %s%s\n", creative.Version, sdkBuild(bi))
	fmt.Fprintf(&b, "go        %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return b.String()
}

// sdkBuild says which copy of the SDK's module went into the build, when
// the build information names one other than the source tree itself.
func sdkBuild(bi *debug.BuildInfo) string {
	for _, d := range bi.Deps {
		if d.Path != sdkModule {
			continue
		}
		if d.Replace != nil {
			return fmt.Sprintf(" (module %s, replaced by %s)", d.Version, strings.TrimSpace(d.Replace.Path+" "+d.Replace.Version))
		}
		if d.Version != "(devel)" {
			return " (module " + d.Version + ")"
		}
	}
	return ""
}

// buildInfo is the binary's build information, or nil.
func buildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}
