/* cpu_features.cc: which features LLVM gives a CPU it knows by name.  The
 * C API answers for the host only (LLVMGetHostCPUFeatures); a named target
 * (ASSOC_CPU, llvm_target.c) needs the same answer from LLVM's own tables,
 * which only its C++ MC layer reads. */
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>

extern "C" char *llvm_cpu_features(const char *triple, const char *cpu, const char *names);

/* names is a list as LLVMGetHostCPUFeatures writes it ("+a,-b,..."): the
 * same names, each signed by whether cpu has it (malloc'd); NULL where the
 * triple's target has no CPU of that name.  The name is checked first:
 * LLVM prints a warning of its own for a name it does not know. */
char *llvm_cpu_features(const char *triple, const char *cpu, const char *names)
{
	std::string err;
	const llvm::Target *t = llvm::TargetRegistry::lookupTarget(triple, err);
	if (!t)
		return NULL;
	std::unique_ptr<llvm::MCSubtargetInfo> any(t->createMCSubtargetInfo(triple, "", ""));
	if (!any || !any->isCPUStringValid(cpu))
		return NULL;
	std::unique_ptr<llvm::MCSubtargetInfo> s(t->createMCSubtargetInfo(triple, cpu, ""));
	if (!s)
		return NULL;
	std::string out;
	for (const char *p = names; *p;) {
		size_t len = strcspn(p, ",");
		if (len > 1 && (*p == '+' || *p == '-')) {
			std::string name(p + 1, len - 1);
			out += out.empty() ? "" : ",";
			out += (s->checkFeatures("+" + name) ? "+" : "-") + name;
		}
		p += len + (p[len] == ',');
	}
	char *r = static_cast<char *>(malloc(out.size() + 1));
	if (!r)
		abort();
	memcpy(r, out.c_str(), out.size() + 1);
	return r;
}
