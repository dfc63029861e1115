# cmake -DSRC=python/scratchplan -DDST=build/<preset>/python/scratchplan -P sync_package.cmake
# Copies the package's *.py, *.pyi and py.typed files when they changed and deletes copies whose
# source is gone, so the build tree always matches the sources (the extension itself is untouched).
cmake_minimum_required(VERSION 3.25)
file(GLOB_RECURSE _src RELATIVE ${SRC} ${SRC}/*.py ${SRC}/*.pyi ${SRC}/py.typed)
file(GLOB_RECURSE _dst RELATIVE ${DST} ${DST}/*.py ${DST}/*.pyi ${DST}/py.typed)
foreach(f IN LISTS _dst)
  if(NOT f IN_LIST _src)
    file(REMOVE ${DST}/${f})
  endif()
endforeach()
foreach(f IN LISTS _src)
  if(f MATCHES "__pycache__")
    continue()
  endif()
  get_filename_component(_dir ${DST}/${f} DIRECTORY)
  file(MAKE_DIRECTORY ${_dir})
  file(COPY_FILE ${SRC}/${f} ${DST}/${f} ONLY_IF_DIFFERENT)
endforeach()
