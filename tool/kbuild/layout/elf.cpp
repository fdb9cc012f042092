#include "kbuild/layout/elf.hpp"

#include <cxxabi.h>
#include <elf.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

namespace kbuild::layout {

namespace {

// Bounds-checked access to the image.
class Image {
 public:
  explicit Image(std::string_view bytes) : m_bytes(bytes) {}
  template <typename T>
  bool read(std::uint64_t offset, T& out) const {
    if (offset > m_bytes.size() || m_bytes.size() - offset < sizeof(T)) return false;
    std::memcpy(&out, m_bytes.data() + offset, sizeof(T));
    return true;
  }
  std::string c_string(std::uint64_t offset, std::uint64_t limit) const {
    if (offset >= m_bytes.size() || offset >= limit) return {};
    size_t end = m_bytes.find('\0', offset);
    if (end == std::string_view::npos || end > limit) end = static_cast<size_t>(limit);
    return std::string(m_bytes.substr(offset, end - offset));
  }
  size_t size() const { return m_bytes.size(); }

 private:
  std::string_view m_bytes;
};

// The sections of an ELF image, with the lookups the reader needs.
class Sections {
 public:
  Sections(const Image& image, std::vector<Elf64_Shdr> table) : m_image(image), m_table(std::move(table)) {}
  const Elf64_Shdr* of_type(std::uint32_t type) const {
    for (const auto& s : m_table)
      if (s.sh_type == type) return &s;
    return nullptr;
  }
  /// The string table a section links to, or nullptr.
  const Elf64_Shdr* linked(const Elf64_Shdr& section) const {
    return section.sh_link < m_table.size() ? &m_table[section.sh_link] : nullptr;
  }
  std::string string_at(const Elf64_Shdr& strtab, std::uint64_t offset) const {
    return m_image.c_string(strtab.sh_offset + offset, strtab.sh_offset + strtab.sh_size);
  }

 private:
  const Image& m_image;
  std::vector<Elf64_Shdr> m_table;
};

Result<void> read_dynamic(const Image& image, const Sections& sections, ElfInfo& info) {
  const Elf64_Shdr* dynamic = sections.of_type(SHT_DYNAMIC);
  const Elf64_Shdr* strtab = dynamic ? sections.linked(*dynamic) : nullptr;
  if (!strtab) return {};
  for (std::uint64_t off = 0; off + sizeof(Elf64_Dyn) <= dynamic->sh_size; off += sizeof(Elf64_Dyn)) {
    Elf64_Dyn entry;
    if (!image.read(dynamic->sh_offset + off, entry)) return fail("truncated dynamic section");
    if (entry.d_tag == DT_NULL) break;
    if (entry.d_tag == DT_NEEDED) info.needed.push_back(sections.string_at(*strtab, entry.d_un.d_val));
    if (entry.d_tag == DT_RPATH) info.rpath = sections.string_at(*strtab, entry.d_un.d_val);
    if (entry.d_tag == DT_RUNPATH) info.runpath = sections.string_at(*strtab, entry.d_un.d_val);
  }
  return {};
}

// Version needs: version index -> name (e.g. 3 -> "GLIBCXX_3.4.29").
Result<std::map<std::uint16_t, std::string>> read_version_needs(const Image& image, const Sections& sections) {
  std::map<std::uint16_t, std::string> names;
  const Elf64_Shdr* verneed = sections.of_type(SHT_GNU_verneed);
  const Elf64_Shdr* strtab = verneed ? sections.linked(*verneed) : nullptr;
  if (!strtab) return names;
  std::uint64_t offset = verneed->sh_offset;
  for (std::uint64_t n = 0; n < verneed->sh_info; ++n) {
    Elf64_Verneed need;
    if (!image.read(offset, need)) return fail("truncated version table");
    std::uint64_t aux_offset = offset + need.vn_aux;
    for (std::uint16_t a = 0; a < need.vn_cnt; ++a) {
      Elf64_Vernaux aux;
      if (!image.read(aux_offset, aux)) return fail("truncated version table");
      names[aux.vna_other & 0x7fff] = sections.string_at(*strtab, aux.vna_name);
      if (aux.vna_next == 0) break;
      aux_offset += aux.vna_next;
    }
    if (need.vn_next == 0) break;
    offset += need.vn_next;
  }
  return names;
}

Result<void> read_dynamic_symbols(const Image& image, const Sections& sections, ElfInfo& info) {
  const Elf64_Shdr* dynsym = sections.of_type(SHT_DYNSYM);
  const Elf64_Shdr* dynstr = dynsym ? sections.linked(*dynsym) : nullptr;
  if (!dynstr) return {};
  KB_TRY_ASSIGN(auto version_names, read_version_needs(image, sections));
  const Elf64_Shdr* versym = sections.of_type(SHT_GNU_versym);
  size_t count = dynsym->sh_entsize ? dynsym->sh_size / dynsym->sh_entsize : 0;
  for (size_t i = 1; i < count; ++i) {
    Elf64_Sym sym;
    if (!image.read(dynsym->sh_offset + i * sizeof(Elf64_Sym), sym)) return fail("truncated symbol table");
    ElfSymbol symbol;
    symbol.name = sections.string_at(*dynstr, sym.st_name);
    symbol.defined = sym.st_shndx != SHN_UNDEF;
    symbol.function = ELF64_ST_TYPE(sym.st_info) == STT_FUNC;
    int bind = ELF64_ST_BIND(sym.st_info), visibility = ELF64_ST_VISIBILITY(sym.st_other);
    symbol.global =
        (bind == STB_GLOBAL || bind == STB_WEAK) && (visibility == STV_DEFAULT || visibility == STV_PROTECTED);
    std::uint16_t index = 0;
    if (versym && image.read(versym->sh_offset + i * sizeof(std::uint16_t), index)) {
      auto it = version_names.find(index & 0x7fff);
      if (it != version_names.end()) symbol.version = it->second;
    }
    info.dynamic_symbols.push_back(std::move(symbol));
  }
  return {};
}

}  // namespace

static Result<std::pair<Elf64_Ehdr, std::vector<Elf64_Shdr>>> read_headers(const Image& image) {
  Elf64_Ehdr header;
  if (!image.read(0, header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) return fail("not an ELF file");
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB)
    return fail("not a 64-bit little-endian ELF file");
  std::vector<Elf64_Shdr> table(header.e_shnum);
  for (size_t i = 0; i < table.size(); ++i)
    if (!image.read(header.e_shoff + i * sizeof(Elf64_Shdr), table[i])) return fail("truncated section table");
  return std::pair{header, std::move(table)};
}

Result<std::vector<std::string>> undefined_symbols_of_object(std::string_view bytes) {
  Image image(bytes);
  KB_TRY_ASSIGN(auto headers, read_headers(image));
  Sections sections(image, std::move(headers.second));
  std::vector<std::string> names;
  const Elf64_Shdr* symtab = sections.of_type(SHT_SYMTAB);
  const Elf64_Shdr* strtab = symtab ? sections.linked(*symtab) : nullptr;
  if (!strtab) return names;
  size_t count = symtab->sh_entsize ? symtab->sh_size / symtab->sh_entsize : 0;
  for (size_t i = 1; i < count; ++i) {
    Elf64_Sym sym;
    if (!image.read(symtab->sh_offset + i * sizeof(Elf64_Sym), sym)) return fail("truncated symbol table");
    int bind = ELF64_ST_BIND(sym.st_info);
    if (sym.st_shndx == SHN_UNDEF && (bind == STB_GLOBAL || bind == STB_WEAK))
      names.push_back(sections.string_at(*strtab, sym.st_name));
  }
  return names;
}

Result<ElfInfo> read_elf(std::string_view bytes) {
  Image image(bytes);
  KB_TRY_ASSIGN(auto headers, read_headers(image));
  const Elf64_Ehdr& header = headers.first;
  ElfInfo info;
  info.machine = header.e_machine == EM_X86_64 ? "x86_64" : header.e_machine == EM_AARCH64 ? "aarch64" : "other";
  info.shared_object = header.e_type == ET_DYN;
  Sections sections(image, std::move(headers.second));
  KB_TRY(read_dynamic(image, sections, info));
  KB_TRY(read_dynamic_symbols(image, sections, info));
  return info;
}

std::string demangle(const std::string& symbol) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status),
                                              std::free);
  return status == 0 && text ? std::string(text.get()) : symbol;
}

}  // namespace kbuild::layout
