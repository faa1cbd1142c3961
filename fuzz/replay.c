/* SPDX-License-Identifier: MIT */
/*
 * Replays fuzz inputs without libFuzzer: each file named on the command line,
 * or every file in a directory named there (default: fuzz/corpus and
 * fuzz/regressions).  A failing input aborts, and its name is printed.
 */
#include <dirent.h>
#include <signal.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *current;

/* A failing input aborts (or crashes): name it on the way out. */
static void name_input(int sig)
{
	static const char msg[] = "fuzz-replay: failing input: ";

	if (current) {
		(void)!write(2, msg, sizeof(msg) - 1);
		(void)!write(2, current, strlen(current));
		(void)!write(2, "\n", 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	static uint8_t buf[1 << 20];

	if (!f) {
		perror(path);
		return -1;
	}
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	current = path;
	LLVMFuzzerTestOneInput(buf, n);
	current = NULL;
	return 0;
}

static int replay_dir(const char *dir, int *count)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort), err = 0;

	if (n < 0) {
		perror(dir);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];
		if (names[i]->d_name[0] != '.' && !err) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
			err = replay_file(path);
			++*count;
		}
		free(names[i]);
	}
	free(names);
	return err;
}

int main(int argc, char **argv)
{
	static const char *defaults[] = { "fuzz/corpus", "fuzz/regressions" };
	const char **paths = argc > 1 ? (const char **)argv + 1 : defaults;
	int npaths = argc > 1 ? argc - 1 : 2, count = 0, failed = 0;

	signal(SIGABRT, name_input);
	signal(SIGSEGV, name_input);
	for (int i = 0; i < npaths; i++) {
		struct stat st;
		int err;

		if (stat(paths[i], &st)) {
			perror(paths[i]);
			failed++;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			err = replay_dir(paths[i], &count);
		} else {
			err = replay_file(paths[i]);
			count++;
		}
		failed += err != 0;
	}
	/* Reaching here means no input tripped a check. */
	printf("%s fuzz-replay/all_%d_inputs\n", failed ? "FAIL" : "PASS", count);
	printf("fuzz-replay: %d passed, %d failed\n", !failed, failed != 0);
	return failed != 0;
}
