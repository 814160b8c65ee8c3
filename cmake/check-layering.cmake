# The architecture, checked at configure time: gs_check_layering() fails the configure with
# one line per broken rule, naming the target and how it breaks it.
#
# Each rule is a function gs__layering_rule_<name>(target out_var) that sets out_var to a
# list of what is wrong with target, one item per problem, or to "" when nothing is. gs_check_layering
# runs every rule in GS_LAYERING_RULES over every product target, so adding a rule is writing
# one such function and appending its name to the list. The helpers below (which directory
# a target is defined in, what it links) are there for rules to share.
#
# What lives elsewhere: the call, with the project's own directories, is at the end of the
# top-level CMakeLists.txt; tests/layering/ shows each rule failing on a throwaway project.

set(GS_LAYERING_RULES product_links_sim)

# Sets out_var to TRUE when dir is one of dirs or below one of them, else FALSE.
function(gs__dir_in_dirs dir dirs out_var)
  foreach(d IN LISTS dirs)
    string(FIND "${dir}/" "${d}/" at)
    if(at EQUAL 0)
      set(${out_var} TRUE PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out_var} FALSE PARENT_SCOPE)
endfunction()

# Sets out_var to the targets defined in dir and in its subdirectories.
function(gs__targets_under dir out_var)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    gs__targets_under("${sub}" more)
    list(APPEND targets ${more})
  endforeach()
  set(${out_var} ${targets} PARENT_SCOPE)
endfunction()

# The targets an entry of LINK_LIBRARIES names: the entry itself, or the target inside a
# $<LINK_ONLY:...>, with the ::@(directory) markers that cross-directory links add removed
# and aliases resolved. Other generator expressions cannot be evaluated at configure time
# and name nothing here; keep simulator links out of them.
function(gs__link_entry_target entry out_var)
  string(REGEX REPLACE "::@\\([^)]*\\)" "" entry "${entry}")
  string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" entry "${entry}")
  set(${out_var} "" PARENT_SCOPE)
  if(entry STREQUAL "" OR NOT TARGET "${entry}")
    return()
  endif()
  get_target_property(aliased "${entry}" ALIASED_TARGET)
  if(aliased)
    set(entry "${aliased}")
  endif()
  set(${out_var} "${entry}" PARENT_SCOPE)
endfunction()

# The targets that target links directly, through LINK_LIBRARIES and INTERFACE_LINK_LIBRARIES.
function(gs__direct_links target out_var)
  set(found "")
  foreach(prop LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
    get_target_property(entries "${target}" ${prop})
    if(NOT entries)
      continue()
    endif()
    foreach(entry IN LISTS entries)
      gs__link_entry_target("${entry}" t)
      if(t)
        list(APPEND found "${t}")
      endif()
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES found)
  set(${out_var} ${found} PARENT_SCOPE)
endfunction()

# Sets out_var to every target that target links, directly or transitively, each as the
# chain that reaches it: "a -> b -> c". Breadth first, so each chain is a shortest one.
function(gs__link_chains target out_var)
  set(chains "")
  set(seen "${target}")
  set(queue "${target}")
  set(chain_${target} "${target}")
  while(queue)
    list(POP_FRONT queue t)
    gs__direct_links("${t}" links)
    foreach(l IN LISTS links)
      if(l IN_LIST seen)
        continue()
      endif()
      list(APPEND seen "${l}")
      list(APPEND queue "${l}")
      set(chain_${l} "${chain_${t}} -> ${l}")
      list(APPEND chains "${chain_${l}}")
    endforeach()
  endwhile()
  set(${out_var} "${chains}" PARENT_SCOPE)
endfunction()

# Whether target belongs to the simulator: defined under one of GS_LAYERING_SIM_DIRS, or
# named gpusim_* / gpusim-*.
function(gs__is_sim_target target out_var)
  get_target_property(dir "${target}" SOURCE_DIR)
  gs__dir_in_dirs("${dir}" "${GS_LAYERING_SIM_DIRS}" in_sim)
  if(in_sim OR target MATCHES "^gpusim[_-]")
    set(${out_var} TRUE PARENT_SCOPE)
  else()
    set(${out_var} FALSE PARENT_SCOPE)
  endif()
endfunction()

# Rule: a product target never links the simulator, directly or through other targets,
# whether they link it PRIVATE or not: a product that loads a library that loads the test
# double still runs on it. The product finds the simulator at run time (include/gpuslice/driver.h) or
# not at all. Each simulator target is reported once, by the first chain that reaches it.
function(gs__layering_rule_product_links_sim target out_var)
  gs__link_chains("${target}" chains)
  set(problems "")
  set(reported "")
  foreach(chain IN LISTS chains)
    set(below_reported FALSE)
    foreach(r IN LISTS reported)
      string(FIND "${chain}" "${r} -> " at)
      if(at EQUAL 0)
        set(below_reported TRUE)
      endif()
    endforeach()
    string(REGEX REPLACE ".* -> " "" linked "${chain}")
    gs__is_sim_target("${linked}" is_sim)
    if(is_sim AND NOT below_reported)
      list(APPEND problems "links the simulator target ${linked} (${chain})")
      list(APPEND reported "${chain}")
    endif()
  endforeach()
  set(${out_var} "${problems}" PARENT_SCOPE)
endfunction()

# gs_check_layering(PRODUCT_DIRS dir... SIM_DIRS dir... [RULES rule...])
#
# Runs the rules (default: GS_LAYERING_RULES) over every target defined in PRODUCT_DIRS and
# their subdirectories, and stops the configure with FATAL_ERROR listing each violation.
# Relative directories are taken from the calling CMakeLists.txt's directory. Call it after
# every add_subdirectory, once all targets and their links exist.
function(gs_check_layering)
  cmake_parse_arguments(ARG "" "" "PRODUCT_DIRS;SIM_DIRS;RULES" ${ARGN})
  if(NOT ARG_RULES)
    set(ARG_RULES ${GS_LAYERING_RULES})
  endif()
  set(GS_LAYERING_SIM_DIRS "")
  foreach(d IN LISTS ARG_SIM_DIRS)
    get_filename_component(abs "${d}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND GS_LAYERING_SIM_DIRS "${abs}")
  endforeach()
  set(products "")
  foreach(d IN LISTS ARG_PRODUCT_DIRS)
    get_filename_component(abs "${d}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    gs__targets_under("${abs}" targets)
    list(APPEND products ${targets})
  endforeach()
  set(violations "")
  foreach(rule IN LISTS ARG_RULES)
    foreach(t IN LISTS products)
      cmake_language(CALL gs__layering_rule_${rule} "${t}" problems)
      foreach(why IN LISTS problems)
        string(APPEND violations "\n  ${rule}: ${t} ${why}")
      endforeach()
    endforeach()
  endforeach()
  if(violations)
    message(FATAL_ERROR "gpuslice layering broken:${violations}")
  endif()
endfunction()
