// compose-check loads a Compose file with compose-go, the loader `docker compose` itself uses,
// as `docker compose config` would: interpolation from the env files, validation against the
// Compose specification's schema, normalization, paths resolved against the project directory,
// the consistency checks (depends_on targets, networks, volumes, ...) and the services' env_file
// entries read. It prints the loaded project as JSON, or the loader's error and exits 1.
//
// Unlike `docker compose`, it reads no variable from its own environment: the result depends only
// on the files named, so a developer's or CI's exported REDIS_URL cannot change what is checked.
// And every warning the loader gives (a variable that is not set, an obsolete attribute) is a
// failure, since an operator would be deploying a blank where a value was meant.
//
//	compose-check [-project-directory DIR] [-env-file FILE]... [-profile NAME]... FILE...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/sirupsen/logrus"
)

// repeated collects every value of a flag given more than once, in order.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// warnings turns what the loader logs at warning level or above into a list the check refuses.
type warnings struct{ messages []string }

func (w *warnings) Levels() []logrus.Level {
	return []logrus.Level{logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel, logrus.WarnLevel}
}

func (w *warnings) Fire(entry *logrus.Entry) error {
	w.messages = append(w.messages, entry.Message)
	return nil
}

func main() {
	var envFiles, profiles repeated
	projectDir := flag.String("project-directory", "",
		"the directory relative paths are resolved from (default: that of the first file)")
	flag.Var(&envFiles, "env-file", "a file of variables for interpolation, as `docker compose --env-file` (repeatable)")
	flag.Var(&profiles, "profile", "a profile to enable (repeatable)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(),
			"usage: compose-check [-project-directory DIR] [-env-file FILE]... [-profile NAME]... FILE...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}

	project, err := load(flag.Args(), *projectDir, envFiles, profiles)
	if err != nil {
		fmt.Fprintf(os.Stderr, "compose-check: %s: %s\n", strings.Join(flag.Args(), " + "), explain(err))
		os.Exit(1)
	}
	out, err := project.MarshalJSON()
	if err != nil {
		fmt.Fprintf(os.Stderr, "compose-check: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}

// The schema forbids every key it does not name with a `false` schema, which its validator reports
// as "services.app.enviroment false schema".
var falseSchema = regexp.MustCompile(`(\S+) false schema`)

func explain(err error) string {
	return falseSchema.ReplaceAllString(err.Error(), "$1: no such attribute in the Compose specification")
}

func load(files []string, projectDir string, envFiles, profiles []string) (*types.Project, error) {
	logged := &warnings{}
	logrus.SetOutput(io.Discard)
	logrus.AddHook(logged)

	options, err := cli.NewProjectOptions(files,
		cli.WithWorkingDirectory(projectDir),
		// Without names, WithEnvFiles takes the project directory's .env, as docker compose does.
		cli.WithEnvFiles(envFiles...),
		cli.WithDotEnv,
		cli.WithDefaultProfiles(profiles...),
		cli.WithInterpolation(true),
		cli.WithNormalization(true),
		cli.WithResolvedPaths(true),
		cli.WithConsistency(true),
		// SkipValidation stays false: the model is checked against the specification's schema.
	)
	if err != nil {
		return nil, err
	}
	project, err := options.LoadProject(context.Background())
	if err != nil {
		return nil, err
	}
	if len(logged.messages) > 0 {
		return nil, errors.New(strings.Join(logged.messages, "; "))
	}
	return project, nil
}
