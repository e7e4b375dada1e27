# lib/catalog: the dataset's samples in the order the script sees them.

lib_libnopfs_core_la_SOURCES += \
	lib/catalog/catalog.c \
	lib/catalog/catalog.h \
	lib/catalog/catalog_cache.c \
	lib/catalog/catalog_extensions.c \
	lib/catalog/catalog_folder.c \
	lib/catalog/catalog_internal.h \
	lib/catalog/catalog_list.c \
	lib/catalog/catalog_meta.c \
	lib/catalog/catalog_scan.c \
	lib/catalog/catalog_serialize.c \
	lib/catalog/catalog_snapshot.c \
	lib/catalog/catalog_walk.c \
	lib/catalog/catalog_walk.h \
	lib/catalog/meta.c \
	lib/catalog/meta.h \
	lib/catalog/meta_scan.c \
	lib/catalog/pyname.c \
	lib/catalog/pyname.h
