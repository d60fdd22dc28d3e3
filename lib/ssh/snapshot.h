/* The key snapshot: what cloud-config-exec writes and authkeys-cmd reads.
 *
 * One file, replaced atomically, that maps a user (and a user + key
 * fingerprint) to rendered authorized_keys lines, each with its expiry.
 * It is built for the sshd hot path: authkeys-cmd runs twice per login, so a
 * lookup touches only the header, two small directories, one block of an
 * index table and the records it returns, whatever the number of keys.
 *
 * Layout (all integers little-endian, every section 8-byte aligned):
 *
 *   header (160 bytes)  magic "NASNAPv\n", version, header size, file size,
 *                       generation, created-at, counts, the offsets of the
 *                       sections, for each index table its slot count and
 *                       the XXH3 of its block directory, and last the XXH3
 *                       of the header itself.
 *   records             one per key: XXH3 of the rest of the record, its
 *                       length, expiry, and the strings user, fingerprint,
 *                       line and (version 2) source (NUL-terminated), plus
 *                       where the key type and the base64 blob sit inside
 *                       the line. Records of one user are contiguous, in the
 *                       order the writer got them.
 *   user table          open addressing (linear probing) over XXH3(user):
 *                       {hash, offset of the user's first record, count,
 *                       bytes}. Load factor <= 1/2.
 *   fingerprint table   open addressing over XXH3(fingerprint) seeded with
 *                       XXH3(user): {hash, record offset}.
 *   directories         per table, one XXH3 per block of 64 slots.
 *
 * The header checksum covers the header, the header covers the directories,
 * a directory covers its table's blocks, and each record carries its own
 * checksum. Opening verifies the header and both directories (kilobytes even
 * for 100,000 keys); a lookup verifies the blocks it probes and every record
 * before returning it. So a torn, truncated or corrupted file is detected
 * wherever the damage is, without hashing megabytes per call. XXH3 is not a
 * MAC: it detects accidents, not forgery. Tampering is prevented by the file
 * being root-owned and not group/world-writable (checked on the open fd by
 * snapshot_open_fd()) in a root-owned directory.
 *
 * Pure functions except snapshot_open_fd() (fstat + mmap) and
 * snapshot_write_at() (atomic replace). Nothing here logs. */
#ifndef NA_SNAPSHOT_H
#define NA_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Version 2 adds each record's source (where the key came from, for the
 * log line authkeys-cmd writes per served key) in the record header's last
 * reserved field and a string after the line; nothing else changed. The
 * writer writes version 2; the reader reads 1 and 2 (a version 1 record has
 * the empty source), so an authkeys-cmd upgraded before cloud-config-exec
 * rewrote the snapshot still serves it. An older authkeys-cmd refuses a
 * version 2 file (-EPROTONOSUPPORT): both come in one package. */
#define SNAPSHOT_VERSION 2
#define SNAPSHOT_VERSION_MIN 1
#define SNAPSHOT_DEFAULT_PATH "/var/lib/cloud-config-exec/authkeys.snap"
/* Ceilings; the writer refuses more, the reader refuses files that claim more. */
#define SNAPSHOT_RECORDS_MAX 1000000u
#define SNAPSHOT_SIZE_MAX ((size_t)512 << 20)
#define SNAPSHOT_USER_MAX 256        /* bytes, like LOGIN_NAME_MAX */
#define SNAPSHOT_FINGERPRINT_MAX 128 /* "SHA256:" + 43 today */
#define SNAPSHOT_LINE_MAX 8192       /* bytes, like KEYS_LINE_MAX */
#define SNAPSHOT_SOURCE_MAX 512      /* bytes, printable */

/* One key as the writer gets it: ready to print. line is one complete
 * authorized_keys line without newline ("[options] type base64 [comment]");
 * expiry is UTC seconds, 0 for none (the line should then already carry
 * expiry-time="...Z" for sshd; the snapshot does not look at options). */
struct snapshot_entry {
	const char *user;
	const char *fingerprint;
	const char *line;
	int64_t expiry;
	const char *source; /* NULL or "": none; else printable, at most SNAPSHOT_SOURCE_MAX bytes */
};

/* One key as a lookup returns it. All pointers point into the snapshot's
 * memory (valid until snapshot_free()), every string is NUL-terminated, the
 * line contains no CR, LF or NUL. type/blob are the key type and base64 blob
 * inside line (not NUL-terminated there; use the lengths). */
struct snapshot_record {
	const char *user;
	const char *fingerprint;
	const char *line;
	size_t line_len;
	const char *type;
	size_t type_len;
	const char *blob;
	size_t blob_len;
	int64_t expiry;
	const char *source; /* "" in a version 1 file or when the writer had none */
	size_t source_len;
};

struct snapshot_info {
	uint32_t version;
	uint64_t generation;
	int64_t created_at;
	uint32_t n_records;
	uint32_t n_users;
	uint64_t size;
};

struct snapshot;

/* --- writer -------------------------------------------------------------- */

/* Builds a snapshot of entries[0..n) in memory. Entries are grouped by user
 * (stable: a user's keys keep their order). Refuses (-EINVAL) an empty or
 * over-long user, fingerprint, line or source, control bytes in user,
 * fingerprint or source,
 * CR/LF in a line, a line whose key type and blob cannot be found, a
 * negative expiry; -EEXIST for a (user, fingerprint) pair given twice;
 * -E2BIG for more than SNAPSHOT_RECORDS_MAX entries or SNAPSHOT_SIZE_MAX
 * bytes. When reterr_index is non-NULL it is set to the offending entry's
 * index on -EINVAL/-EEXIST. On success *ret (malloc'ed, owned by the caller)
 * and *ret_size are set. n == 0 gives a valid, empty snapshot. */
int snapshot_build(const struct snapshot_entry *entries, size_t n, uint64_t generation, int64_t created_at,
		   void **ret, size_t *ret_size, size_t *reterr_index);

/* The same in format version (SNAPSHOT_VERSION_MIN..SNAPSHOT_VERSION; 1
 * drops the sources): for the compatibility tests and mksnapshot only. */
int snapshot_build_version(uint32_t version, const struct snapshot_entry *entries, size_t n, uint64_t generation,
			   int64_t created_at, void **ret, size_t *ret_size, size_t *reterr_index);

/* Builds as above and atomically replaces dirfd/name (temporary file, fsync,
 * rename, fsync of the directory; fsx_write_atomic_at) with mode 0644 owned
 * by uid:gid (cloud-config-exec passes 0:0; FSX_UID_KEEP/FSX_GID_KEEP keep
 * the writer's own). Returns 1 when written, or a negative errno. */
int snapshot_write_at(int dirfd, const char *name, const struct snapshot_entry *entries, size_t n,
		      uint64_t generation, int64_t created_at, uid_t uid, gid_t gid, size_t *reterr_index);

/* --- reader -------------------------------------------------------------- */

/* Validates data[0..size) as a snapshot: magic, version, header checksum,
 * file size, section bounds, both table directories. The buffer is not
 * copied and must outlive the returned object. Errors: -EBADMSG (bad magic,
 * checksum, bounds: a corrupt or torn file), -EPROTONOSUPPORT (a version
 * outside SNAPSHOT_VERSION_MIN..SNAPSHOT_VERSION), -ENOMEM. reterr_what, when non-NULL, is set to a static string
 * naming the failed check on error. Pure: this is what the fuzzer drives. */
int snapshot_parse(const void *data, size_t size, struct snapshot **ret, const char **reterr_what);

/* Checks the open fd and maps it: a regular file, owned by owner (root, 0,
 * in production; tests pass their own uid), not group- or world-writable,
 * at most SNAPSHOT_SIZE_MAX bytes; then snapshot_parse(). -EPERM for owner or
 * mode, -EBADFD for not a regular file, -EFBIG for too large, else as
 * snapshot_parse(). The fd can be closed afterwards. */
int snapshot_open_fd(int fd, uid_t owner, struct snapshot **ret, const char **reterr_what);

/* Unmaps (if snapshot_open_fd() mapped it) and frees. NULL is fine. */
void snapshot_free(struct snapshot *s);

void snapshot_get_info(const struct snapshot *s, struct snapshot_info *ret);

/* All records of user, in the writer's order. Returns the count (0 when the
 * user has no keys; *ret is then NULL) and sets *ret to a malloc'ed array
 * (free() it; the records point into s). -EBADMSG if any block or record it
 * touches fails its checksum or bounds: then nothing is returned, never part
 * of the set. -ENOMEM. Expired records are returned too; filtering is the
 * caller's policy. */
int snapshot_lookup_user(const struct snapshot *s, const char *user, struct snapshot_record **ret,
			 const char **reterr_what);

/* The record of user with this fingerprint. Returns 1 and fills *ret, 0 when
 * there is none, -EBADMSG as above. */
int snapshot_lookup_fingerprint(const struct snapshot *s, const char *user, const char *fingerprint,
				struct snapshot_record *ret, const char **reterr_what);

#endif
